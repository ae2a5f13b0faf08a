-- 20,000 rows (about 1 MB): a key that is distinct in every row, one
-- with 10 values, and a value to sum.
CREATE TABLE events AS
  SELECT g AS id,
         (g * 7919) % 20011 AS k,
         g % 10 AS kind,
         g % 100 AS v
  FROM generate_series(1, 20000) g;
VACUUM ANALYZE events;
-- In memory, one backend, hashed.
ALTER DATABASE postgres SET work_mem = '64MB';
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
ALTER DATABASE postgres SET enable_sort = off;
