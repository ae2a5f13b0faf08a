-- 150,000 rows of a lineitem-like table (about 20 MB).
CREATE TABLE lineitem AS
  SELECT g AS l_id,
         (g % 20000) AS l_partkey,
         (g % 1000) AS l_suppkey,
         (1 + g % 50)::numeric AS l_quantity,
         (g % 100000 / 10.0)::numeric(12, 2) AS l_extendedprice,
         ((g % 11) / 100.0)::numeric(12, 2) AS l_discount,
         ((g % 9) / 100.0)::numeric(12, 2) AS l_tax,
         (ARRAY['A', 'N', 'R'])[1 + g % 3]::char(1) AS l_returnflag,
         (ARRAY['F', 'O'])[1 + g % 2]::char(1) AS l_linestatus,
         (date '1995-01-01' + g % 2000) AS l_shipdate,
         'comment ' || (g % 977) AS l_comment,
         repeat('x', 20) AS l_pad
  FROM generate_series(1, 150000) g;
VACUUM ANALYZE lineitem;
-- In memory, one backend, hashed.
ALTER DATABASE postgres SET work_mem = '64MB';
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
ALTER DATABASE postgres SET enable_sort = off;
