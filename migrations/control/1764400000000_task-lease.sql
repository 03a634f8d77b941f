-- Up Migration
-- The lease's fencing token: bumped each time a node takes the task. A node's writes about the task (its end)
-- name the generation it took; a node whose task was taken over meanwhile finds a newer one and stops.
ALTER TABLE agent_runner.tasks ADD COLUMN lease_generation integer NOT NULL DEFAULT 0;
-- Which node ran each event's line, and under which generation (no task runs on two nodes at once: tested).
ALTER TABLE agent_runner.events ADD COLUMN node_id text, ADD COLUMN lease_generation integer;

-- Down Migration
ALTER TABLE agent_runner.events DROP COLUMN lease_generation, DROP COLUMN node_id;
ALTER TABLE agent_runner.tasks DROP COLUMN lease_generation;
