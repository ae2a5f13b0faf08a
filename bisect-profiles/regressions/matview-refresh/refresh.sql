-- REFRESH takes no parameters: every run fills a new heap with the
-- view's rows again, so nothing is planned once and reused.
REFRESH MATERIALIZED VIEW facts_copy;
