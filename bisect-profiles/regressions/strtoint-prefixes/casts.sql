-- Four integers parsed from text a row (text to int is an I/O
-- conversion: int2in, int4in and int8in, so pg_strtoint16/32/64).
\set lo random(0, 1000)
SELECT sum(a::int4), sum(b::int4), sum(c::int2), sum(d::int8)
  FROM texts WHERE id > :lo;
