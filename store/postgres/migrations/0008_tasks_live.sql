-- 8: a user's live tasks, which CreateTask counts against its limit (the
-- statuses are literals: a partial index serves only queries that name
-- them the same way).
CREATE INDEX tasks_live ON tasks (principal) WHERE status IN ('working', 'input_required');
