-- VALIDATE CONSTRAINT scans the table under SHARE UPDATE EXCLUSIVE: reads and
-- writes go on while existing rows are checked. Legacy rows have no
-- tool_outcome, so all of them pass.
ALTER TABLE run_steps VALIDATE CONSTRAINT run_steps_tool_outcome_known;
ALTER TABLE run_steps VALIDATE CONSTRAINT run_steps_tool_outcome_only_on_tool_steps;
ALTER TABLE run_steps VALIDATE CONSTRAINT run_steps_tool_outcome_agrees_with_is_error;
