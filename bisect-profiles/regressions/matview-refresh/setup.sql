-- A narrow table, so that the refresh's cost is the per-row insert into
-- the new heap (frozen, HEAP_INSERT_FROZEN) rather than copying wide rows.
CREATE TABLE facts AS
  SELECT i AS id, i % 1000 AS grp FROM generate_series(1, 100000) AS i;
VACUUM ANALYZE facts;
CREATE MATERIALIZED VIEW facts_copy AS SELECT id, grp FROM facts;
