-- "common & rare" on an odd document: many occurrences of one word, no
-- substring that satisfies the query (the fix's worst case).
\set d random(0, 49)
SELECT length(ts_headline('simple', body, to_tsquery('simple', 'apple & zebra')))
  FROM docs WHERE id = :d * 2 + 1;
