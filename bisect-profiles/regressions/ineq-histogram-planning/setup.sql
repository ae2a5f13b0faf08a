-- 40 rows of eight int4 columns and four text columns, each of 40
-- distinct values: with a statistics target of 10, ANALYZE keeps no most
-- common values and an 11-bound histogram of each column, which every
-- inequality below is estimated against.
CREATE TABLE readings AS
  SELECT g AS id,
         (g * 7) % 211 AS c1, (g * 11) % 211 AS c2,
         (g * 13) % 211 AS c3, (g * 17) % 211 AS c4,
         (g * 19) % 211 AS c5, (g * 23) % 211 AS c6,
         (g * 29) % 211 AS c7, (g * 31) % 211 AS c8,
         lpad(((g * 37) % 211)::text, 3, '0') AS t1,
         lpad(((g * 41) % 211)::text, 3, '0') AS t2,
         lpad(((g * 43) % 211)::text, 3, '0') AS t3,
         lpad(((g * 47) % 211)::text, 3, '0') AS t4
  FROM generate_series(1, 40) g;
SET default_statistics_target = 10;
VACUUM ANALYZE readings;
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
