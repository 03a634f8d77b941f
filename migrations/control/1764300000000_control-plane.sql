-- Up Migration
-- The control plane's own tables (pg-boss keeps its queue in its own schema, pgboss, migrated by pg-boss).
CREATE SCHEMA IF NOT EXISTS agent_runner;

-- One row per `serve --control` process: what it holds, and when it last said it is alive.
CREATE TABLE agent_runner.nodes (
  id text PRIMARY KEY,
  host text NOT NULL,
  pid integer NOT NULL,
  url text,
  capacity integer NOT NULL CHECK (capacity >= 0),
  running integer NOT NULL DEFAULT 0 CHECK (running >= 0),
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- One row per task of the fleet. repo_url never holds credentials (they are stripped before the insert).
CREATE TABLE agent_runner.tasks (
  id text PRIMARY KEY,
  repo_url text NOT NULL,
  base text,
  prd text NOT NULL,
  state text NOT NULL DEFAULT 'QUEUED',
  exit_code integer,
  node_id text REFERENCES agent_runner.nodes (id) ON DELETE SET NULL,
  job_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  ended_at timestamptz
);
CREATE INDEX tasks_state_created ON agent_runner.tasks (state, created_at);

-- Every journal event of every task, after the journal writer's redaction; seq is the journal's line number.
CREATE TABLE agent_runner.events (
  task_id text NOT NULL REFERENCES agent_runner.tasks (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  event jsonb NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, seq)
);

-- Down Migration
DROP TABLE agent_runner.events;
DROP TABLE agent_runner.tasks;
DROP TABLE agent_runner.nodes;
