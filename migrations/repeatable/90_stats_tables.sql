-- Made from the rollup catalogue (src/domain/outcome-rollups.ts) by `npm run rollups:write`: do not edit.
-- The rollups are made from run_steps: when the catalogue changes, they are dropped, made again
-- and counted again, under the locks that keep writers out meanwhile.
SET LOCAL lock_timeout = '5s';
LOCK TABLE runs, run_steps IN SHARE MODE;
DO $drop$
DECLARE
  t text;
BEGIN
  FOR t IN
    SELECT tablename FROM pg_tables
     WHERE schemaname = current_schema()
       AND (tablename LIKE 'stats\_%' OR tablename = ANY (ARRAY['tool_outcome_daily', 'tool_outcome_owner_daily', 'tool_outcome_owner_daily_durations', 'tool_outcome_hourly', 'tool_outcome_hourly_durations', 'tool_outcome_server_daily', 'tool_outcome_owner_configuration_daily', 'tool_outcome_owner_tool_daily', 'tool_outcome_owner_configuration_server_daily', 'tool_outcome_server_hourly', 'tool_outcome_owner_configuration_hourly', 'tool_outcome_owner_configuration_weekly', 'tool_outcome_owner_configuration_server_weekly', 'tool_outcome_owner_weekly', 'tool_outcome_owner_server_weekly', 'tool_outcome_configuration_server_weekly', 'tool_outcome_owner_tool_weekly', 'tool_outcome_server_tool_weekly', 'tool_outcome_configuration_tool_weekly', 'tool_outcome_owner_configuration_tool_weekly', 'tool_outcome_weekly', 'tool_outcome_all_time', 'tool_outcome_all_time_durations', 'tool_outcome_owner_server_tool_all_time', 'tool_outcome_configuration_server_tool_all_time', 'tool_outcome_owner_configuration_server_all_time', 'tool_outcome_owner_configuration_tool_all_time', 'tool_outcome_owner_server_all_time', 'tool_outcome_configuration_server_all_time']))
  LOOP
    EXECUTE format('DROP TABLE %I', t);
  END LOOP;
END;
$drop$;

CREATE TABLE stats_server_daily (
  day date NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_server_daily_pkey PRIMARY KEY (day, server),
  CONSTRAINT stats_server_daily_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE TABLE stats_server_tool_daily (
  day date NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_server_tool_daily_pkey PRIMARY KEY (day, server, tool_name),
  CONSTRAINT stats_server_tool_daily_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_server_tool_daily_server ON stats_server_tool_daily (server, day);

CREATE TABLE stats_owner_configuration_daily (
  day date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_daily_pkey PRIMARY KEY (day, owner, configuration),
  CONSTRAINT stats_owner_configuration_daily_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_owner_configuration_daily_owner ON stats_owner_configuration_daily (owner, day);

CREATE TABLE stats_owner_tool_daily (
  day date NOT NULL,
  owner text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_tool_daily_pkey PRIMARY KEY (day, owner, tool_name),
  CONSTRAINT stats_owner_tool_daily_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_owner_tool_daily_owner ON stats_owner_tool_daily (owner, day);

CREATE TABLE stats_owner_configuration_server_daily (
  day date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_server_daily_pkey PRIMARY KEY (day, owner, configuration, server),
  CONSTRAINT stats_owner_configuration_server_daily_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_owner_configuration_server_daily_owner ON stats_owner_configuration_server_daily (owner, day);

CREATE TABLE stats_owner_configuration_server_tool_daily (
  day date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_daily_pkey PRIMARY KEY (day, owner, configuration, server, tool_name)
);

CREATE TABLE stats_owner_configuration_server_tool_daily_durations (
  day date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  duration_bucket smallint NOT NULL,
  calls bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_daily_durations_pkey PRIMARY KEY (day, owner, configuration, server, tool_name, duration_bucket),
  CONSTRAINT stats_owner_configuration_server_tool_daily_durations_bucket CHECK (duration_bucket >= 0 AND duration_bucket <= 64)
);

CREATE INDEX stats_owner_configuration_server_tool_daily_group ON stats_owner_configuration_server_tool_daily (owner, server, tool_name, configuration, day, ok, failed, cancelled);

CREATE INDEX stats_owner_configuration_server_tool_daily_durations_group ON stats_owner_configuration_server_tool_daily_durations (owner, server, tool_name, configuration, day, duration_bucket, calls);

CREATE INDEX stats_owner_configuration_server_tool_daily_cgroup ON stats_owner_configuration_server_tool_daily (configuration, server, tool_name, day, owner, ok, failed, cancelled);

CREATE INDEX stats_owner_configuration_server_tool_daily_durations_cgroup ON stats_owner_configuration_server_tool_daily_durations (configuration, server, tool_name, day, owner, duration_bucket, calls);

CREATE INDEX stats_owner_configuration_server_tool_daily_durations_toolday ON stats_owner_configuration_server_tool_daily_durations (owner, server, tool_name, day, duration_bucket, calls);

CREATE TABLE stats_server_hourly (
  hour timestamp with time zone NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_server_hourly_pkey PRIMARY KEY (hour, server),
  CONSTRAINT stats_server_hourly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE TABLE stats_owner_configuration_hourly (
  hour timestamp with time zone NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_hourly_pkey PRIMARY KEY (hour, owner, configuration),
  CONSTRAINT stats_owner_configuration_hourly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_owner_configuration_hourly_owner ON stats_owner_configuration_hourly (owner, hour);

CREATE TABLE stats_owner_configuration_server_tool_hourly (
  hour timestamp with time zone NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_hourly_pkey PRIMARY KEY (hour, owner, configuration, server, tool_name)
);

CREATE TABLE stats_owner_configuration_server_tool_hourly_durations (
  hour timestamp with time zone NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  duration_bucket smallint NOT NULL,
  calls bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_hourly_durations_pkey PRIMARY KEY (hour, owner, configuration, server, tool_name, duration_bucket),
  CONSTRAINT stats_owner_configuration_server_tool_hourly_durations_bucket CHECK (duration_bucket >= 0 AND duration_bucket <= 64)
);

CREATE INDEX stats_owner_configuration_server_tool_hourly_owner ON stats_owner_configuration_server_tool_hourly (owner, hour);

CREATE INDEX stats_owner_configuration_server_tool_hourly_durations_owner ON stats_owner_configuration_server_tool_hourly_durations (owner, hour);

CREATE TABLE stats_owner_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_weekly_pkey PRIMARY KEY (week, owner),
  CONSTRAINT stats_owner_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_weekly_owner ON stats_owner_weekly (owner, week);

CREATE TABLE stats_server_tool_weekly (
  week date NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_server_tool_weekly_pkey PRIMARY KEY (week, server, tool_name),
  CONSTRAINT stats_server_tool_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_server_tool_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE TABLE stats_owner_configuration_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_weekly_pkey PRIMARY KEY (week, owner, configuration),
  CONSTRAINT stats_owner_configuration_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_configuration_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_configuration_weekly_owner ON stats_owner_configuration_weekly (owner, week);

CREATE TABLE stats_owner_server_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_server_weekly_pkey PRIMARY KEY (week, owner, server),
  CONSTRAINT stats_owner_server_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_server_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_server_weekly_group ON stats_owner_server_weekly (owner, server, week, ok, failed, cancelled);

CREATE TABLE stats_configuration_server_weekly (
  week date NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_configuration_server_weekly_pkey PRIMARY KEY (week, configuration, server),
  CONSTRAINT stats_configuration_server_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_configuration_server_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_configuration_server_weekly_group ON stats_configuration_server_weekly (configuration, server, week, ok, failed, cancelled);

CREATE TABLE stats_owner_tool_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_tool_weekly_pkey PRIMARY KEY (week, owner, tool_name),
  CONSTRAINT stats_owner_tool_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_tool_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_tool_weekly_owner ON stats_owner_tool_weekly (owner, week);

CREATE TABLE stats_owner_configuration_server_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_server_weekly_pkey PRIMARY KEY (week, owner, configuration, server),
  CONSTRAINT stats_owner_configuration_server_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_configuration_server_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_configuration_server_weekly_group ON stats_owner_configuration_server_weekly (owner, configuration, server, week, ok, failed, cancelled);

CREATE TABLE stats_configuration_tool_weekly (
  week date NOT NULL,
  configuration text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_configuration_tool_weekly_pkey PRIMARY KEY (week, configuration, tool_name),
  CONSTRAINT stats_configuration_tool_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_configuration_tool_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE TABLE stats_owner_configuration_tool_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_tool_weekly_pkey PRIMARY KEY (week, owner, configuration, tool_name),
  CONSTRAINT stats_owner_configuration_tool_weekly_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0)),
  CONSTRAINT stats_owner_configuration_tool_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE INDEX stats_owner_configuration_tool_weekly_group ON stats_owner_configuration_tool_weekly (owner, configuration, tool_name, week, ok, failed, cancelled);

CREATE TABLE stats_owner_configuration_server_tool_weekly (
  week date NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_weekly_pkey PRIMARY KEY (week, owner, configuration, server, tool_name),
  CONSTRAINT stats_owner_configuration_server_tool_weekly_monday CHECK (EXTRACT(isodow FROM week) = 1)
);

CREATE TABLE stats_configuration_server_all_time (
  configuration text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_configuration_server_all_time_pkey PRIMARY KEY (configuration, server)
);

CREATE INDEX stats_configuration_server_all_time_calls ON stats_configuration_server_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_configuration_server_all_time_order ON stats_configuration_server_all_time (server COLLATE "C", configuration COLLATE "C");

CREATE TABLE stats_owner_server_all_time (
  owner text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_server_all_time_pkey PRIMARY KEY (owner, server)
);

CREATE INDEX stats_owner_server_all_time_calls ON stats_owner_server_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_owner_server_all_time_order ON stats_owner_server_all_time (server COLLATE "C", owner COLLATE "C");

CREATE TABLE stats_owner_configuration_tool_all_time (
  owner text NOT NULL,
  configuration text NOT NULL,
  tool_name text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_tool_all_time_pkey PRIMARY KEY (owner, configuration, tool_name)
);

CREATE INDEX stats_owner_configuration_tool_all_time_calls ON stats_owner_configuration_tool_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_owner_configuration_tool_all_time_order ON stats_owner_configuration_tool_all_time (tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE TABLE stats_owner_configuration_server_all_time (
  owner text NOT NULL,
  configuration text NOT NULL,
  server text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_all_time_pkey PRIMARY KEY (owner, configuration, server)
);

CREATE INDEX stats_owner_configuration_server_all_time_calls ON stats_owner_configuration_server_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_owner_configuration_server_all_time_order ON stats_owner_configuration_server_all_time (server COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE TABLE stats_configuration_server_tool_all_time (
  server text NOT NULL,
  tool_name text NOT NULL,
  configuration text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_configuration_server_tool_all_time_pkey PRIMARY KEY (server, tool_name, configuration)
);

CREATE INDEX stats_configuration_server_tool_all_time_calls ON stats_configuration_server_tool_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_configuration_server_tool_all_time_rate ON stats_configuration_server_tool_all_time (COALESCE(failed::double precision / NULLIF(ok::double precision + failed::double precision, 0), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX stats_configuration_server_tool_all_time_failures ON stats_configuration_server_tool_all_time ((failed::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE INDEX stats_configuration_server_tool_all_time_order ON stats_configuration_server_tool_all_time (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C");

CREATE TABLE stats_owner_server_tool_all_time (
  server text NOT NULL,
  tool_name text NOT NULL,
  owner text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_server_tool_all_time_pkey PRIMARY KEY (server, tool_name, owner)
);

CREATE INDEX stats_owner_server_tool_all_time_calls ON stats_owner_server_tool_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_owner_server_tool_all_time_rate ON stats_owner_server_tool_all_time (COALESCE(failed::double precision / NULLIF(ok::double precision + failed::double precision, 0), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE INDEX stats_owner_server_tool_all_time_failures ON stats_owner_server_tool_all_time ((failed::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE INDEX stats_owner_server_tool_all_time_order ON stats_owner_server_tool_all_time (server COLLATE "C", tool_name COLLATE "C", owner COLLATE "C");

CREATE TABLE stats_owner_configuration_server_tool_all_time (
  server text NOT NULL,
  tool_name text NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  ok bigint DEFAULT 0 NOT NULL,
  failed bigint DEFAULT 0 NOT NULL,
  cancelled bigint DEFAULT 0 NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_all_time_pkey PRIMARY KEY (server, tool_name, owner, configuration)
);

CREATE TABLE stats_owner_configuration_server_tool_all_time_histograms (
  server text NOT NULL,
  tool_name text NOT NULL,
  owner text NOT NULL,
  configuration text NOT NULL,
  durations bigint[] DEFAULT '{}'::bigint[] NOT NULL,
  CONSTRAINT stats_owner_configuration_server_tool_all_time_histograms_pkey PRIMARY KEY (server, tool_name, owner, configuration),
  CONSTRAINT stats_owner_configuration_server_tool_all_time_histograms_shape CHECK (cardinality(durations) = 0 OR (array_ndims(durations) = 1 AND array_lower(durations, 1) >= 1 AND array_upper(durations, 1) <= 65 AND array_position(durations, NULL::bigint) IS NULL AND durations[array_lower(durations, 1)] <> 0 AND durations[array_upper(durations, 1)] <> 0))
);

CREATE INDEX stats_owner_configuration_server_tool_all_time_calls ON stats_owner_configuration_server_tool_all_time (((ok + failed + cancelled)));

CREATE INDEX stats_owner_configuration_server_tool_all_time_rate ON stats_owner_configuration_server_tool_all_time (COALESCE(failed::double precision / NULLIF(ok::double precision + failed::double precision, 0), '-Infinity'::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX stats_owner_configuration_server_tool_all_time_failures ON stats_owner_configuration_server_tool_all_time ((failed::double precision) DESC, server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

CREATE INDEX stats_owner_configuration_server_tool_all_time_order ON stats_owner_configuration_server_tool_all_time (server COLLATE "C", tool_name COLLATE "C", configuration COLLATE "C", owner COLLATE "C");

SELECT tool_outcome_rollups_rebuild();
ANALYZE stats_server_daily;
ANALYZE stats_server_tool_daily;
ANALYZE stats_owner_configuration_daily;
ANALYZE stats_owner_tool_daily;
ANALYZE stats_owner_configuration_server_daily;
ANALYZE stats_owner_configuration_server_tool_daily;
ANALYZE stats_owner_configuration_server_tool_daily_durations;
ANALYZE stats_server_hourly;
ANALYZE stats_owner_configuration_hourly;
ANALYZE stats_owner_configuration_server_tool_hourly;
ANALYZE stats_owner_configuration_server_tool_hourly_durations;
ANALYZE stats_owner_weekly;
ANALYZE stats_server_tool_weekly;
ANALYZE stats_owner_configuration_weekly;
ANALYZE stats_owner_server_weekly;
ANALYZE stats_configuration_server_weekly;
ANALYZE stats_owner_tool_weekly;
ANALYZE stats_owner_configuration_server_weekly;
ANALYZE stats_configuration_tool_weekly;
ANALYZE stats_owner_configuration_tool_weekly;
ANALYZE stats_owner_configuration_server_tool_weekly;
ANALYZE stats_configuration_server_all_time;
ANALYZE stats_owner_server_all_time;
ANALYZE stats_owner_configuration_tool_all_time;
ANALYZE stats_owner_configuration_server_all_time;
ANALYZE stats_configuration_server_tool_all_time;
ANALYZE stats_owner_server_tool_all_time;
ANALYZE stats_owner_configuration_server_tool_all_time;
ANALYZE stats_owner_configuration_server_tool_all_time_histograms;
