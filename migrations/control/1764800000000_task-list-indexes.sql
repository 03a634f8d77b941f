-- Up Migration
-- A page of the fleet's tasks (`GET /api/tasks`: newest first, after a cursor (created_at, id), perhaps of some
-- states or nodes) is an index scan of one of these, whatever the number of tasks. The (state, created_at, id)
-- index also serves the queue's oldest task of a state, which the index it replaces did.
CREATE INDEX tasks_created_id ON agent_runner.tasks (created_at, id);
CREATE INDEX tasks_state_created_id ON agent_runner.tasks (state, created_at, id);
CREATE INDEX tasks_node_created_id ON agent_runner.tasks (node_id, created_at, id);
DROP INDEX agent_runner.tasks_state_created;

-- Down Migration
CREATE INDEX tasks_state_created ON agent_runner.tasks (state, created_at);
DROP INDEX agent_runner.tasks_node_created_id;
DROP INDEX agent_runner.tasks_state_created_id;
DROP INDEX agent_runner.tasks_created_id;
