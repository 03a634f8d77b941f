-- Up Migration
-- What a client asked of a task another node runs (answer its question, stop it), written by any node and taken
-- by the node that runs the task (woken by NOTIFY agent_runner_requests, payload the task id). An answer's text
-- is the user's own input to the task: stored as given, never logged.
CREATE TABLE agent_runner.task_requests (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  task_id text NOT NULL REFERENCES agent_runner.tasks (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('answer', 'stop')),
  text text,
  created_at timestamptz NOT NULL DEFAULT now(),
  taken_at timestamptz,
  taken_by text
);
CREATE INDEX task_requests_pending ON agent_runner.task_requests (task_id) WHERE taken_at IS NULL;

-- Down Migration
DROP TABLE agent_runner.task_requests;
