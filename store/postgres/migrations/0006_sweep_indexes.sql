-- 6: what Sweep looks up: operations by age, whether a record still
-- refers to one, records of a kind by age.
CREATE INDEX operations_completed_at ON operations (completed_at);
CREATE INDEX records_operation ON records (operation_id);
CREATE INDEX records_kind_updated ON records (kind, updated_at);
