-- 200 documents, each three levels deep: 10 items of 10 parts of 10
-- numbers, so JSON_TABLE makes 1,000 rows of a document, each level a
-- NESTED PATH of the one above it.
CREATE TABLE docs AS
  SELECT d AS id,
         jsonb_build_object('a',
           (SELECT jsonb_agg(jsonb_build_object('id', i, 'b',
                     (SELECT jsonb_agg(jsonb_build_object('id', j, 'c',
                               (SELECT jsonb_agg((d + i * j + k) % 97)
                                  FROM generate_series(1, 10) AS k)))
                        FROM generate_series(1, 10) AS j)))
              FROM generate_series(1, 10) AS i)) AS doc
  FROM generate_series(1, 200) AS d;
ALTER TABLE docs ADD PRIMARY KEY (id);
VACUUM ANALYZE docs;
