-- 100 documents of about 3,000 words each (about 2 MB): "apple" every
-- 10th word, "zebra" only in even-numbered documents, once near the end.
CREATE TABLE docs AS
  SELECT d AS id,
         string_agg(CASE WHEN w % 10 = 0 THEN 'apple'
                         WHEN d % 2 = 0 AND w = 2950 THEN 'zebra'
                         ELSE 'word' || (w * 7 + d) % 500 END, ' ' ORDER BY w) AS body
  FROM generate_series(1, 100) d, generate_series(1, 3000) w
  GROUP BY d;
ALTER TABLE docs ADD PRIMARY KEY (id);
VACUUM ANALYZE docs;
