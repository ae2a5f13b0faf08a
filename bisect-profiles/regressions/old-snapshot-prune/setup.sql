-- 16,000 rows of about 420 bytes: some 19 rows a heap page, so that what
-- is done once a page (pruning's horizon check) weighs against what is
-- done once a row. Some 850 pages: under the 1,000 pages from which
-- 9.6's planner considers a parallel scan, on every version.
CREATE TABLE wide AS
  SELECT i AS id, i % 997 AS k1, i % 991 AS k2, i % 983 AS k3,
         i % 977 AS k4, i % 971 AS k5, i % 967 AS k6, i % 953 AS k7,
         repeat('x', 360) AS pad
  FROM generate_series(1, 16000) AS i;
-- Eight indexes: the culprit looks each one up in the syscache at every
-- page a scan reads, when old_snapshot_threshold is set.
CREATE INDEX ON wide (id);
CREATE INDEX ON wide (k1);
CREATE INDEX ON wide (k2);
CREATE INDEX ON wide (k3);
CREATE INDEX ON wide (k4);
CREATE INDEX ON wide (k5);
CREATE INDEX ON wide (k6);
CREATE INDEX ON wide (k7);
VACUUM ANALYZE wide;
-- A sequential scan, whatever the planner thinks of the indexes.
ALTER DATABASE postgres SET enable_indexscan = off;
ALTER DATABASE postgres SET enable_bitmapscan = off;
ALTER DATABASE postgres SET enable_indexonlyscan = off;
