-- The same query on an even document, where both words occur.
\set d random(1, 50)
SELECT length(ts_headline('simple', body, to_tsquery('simple', 'apple & zebra')))
  FROM docs WHERE id = :d * 2;
