-- 20,000 rows of integers stored as text (about 1 MB), short and long,
-- negative and positive, for int2, int4 and int8 input.
CREATE TABLE texts AS
  SELECT g AS id,
         (g % 1000)::text AS a,
         (-(g * 7919 % 5000))::text AS b,
         (g % 10)::text AS c,
         (g::bigint * 104729)::text AS d
  FROM generate_series(1, 20000) g;
VACUUM ANALYZE texts;
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
