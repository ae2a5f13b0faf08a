-- One document a transaction, its three levels joined as JSON_TABLE rows.
\set id random(1, 200)
SELECT count(*), sum(jt.x)
  FROM docs,
       JSON_TABLE(docs.doc, '$.a[*]'
         COLUMNS (a_id int PATH '$.id',
                  NESTED PATH '$.b[*]' COLUMNS (
                    b_id int PATH '$.id',
                    NESTED PATH '$.c[*]' COLUMNS (x int PATH '$')))) AS jt
 WHERE docs.id = :id;
