-- 200,000 rows of float8 (about 15 MB); each transaction reads 20,000.
CREATE TABLE floats AS
  SELECT g AS id, random() AS a, random() AS b, random() AS c
  FROM generate_series(1, 200000) g;
ALTER TABLE floats ADD PRIMARY KEY (id);
VACUUM ANALYZE floats;
-- One backend does the work: no parallel workers on a 2-CPU machine.
ALTER DATABASE postgres SET max_parallel_workers_per_gather = 0;
