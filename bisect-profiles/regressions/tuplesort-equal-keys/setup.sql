-- 200,000 rows whose sort key has 8 distinct values, and a column that is
-- the same everywhere (about 10 MB).
CREATE TABLE dups AS
  SELECT g AS id, (g % 8)::int4 AS k, 42::int8 AS same
  FROM generate_series(1, 200000) g;
ALTER TABLE dups ADD PRIMARY KEY (id);
VACUUM ANALYZE dups;
-- The sorts stay in memory, in one backend.
ALTER DATABASE postgres SET work_mem = '64MB';
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
