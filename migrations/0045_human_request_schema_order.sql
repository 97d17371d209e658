-- A request's schema and a proposed call's arguments keep the order they were
-- sent in: jsonb stores an object's keys sorted by length, so a form read
-- back from it showed its fields in another order than the agent asked them.
-- Nothing queries inside either column; json keeps the text as sent (checked
-- and bounded before it is stored). Rows stored before keep jsonb's order.
ALTER TABLE human_requests ALTER COLUMN schema TYPE json USING schema::json;
ALTER TABLE human_requests ALTER COLUMN arguments TYPE json USING arguments::json;
