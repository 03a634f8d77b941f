-- Up Migration
-- Named API tokens of the fleet: any node accepts any token here. The token itself is never stored: `hash` is
-- scrypt's output with a salt of its own (src/identity/api-token.ts); `id` is the token's public part.
CREATE TABLE agent_runner.api_tokens (
  id text PRIMARY KEY,
  name text NOT NULL,
  role text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
-- One live token per name (a revoked name may be given again).
CREATE UNIQUE INDEX api_tokens_live_name ON agent_runner.api_tokens (name) WHERE revoked_at IS NULL;

-- Every call that changed something, on any node: who (the token's name and role), what, which task, from
-- where, how it was answered. No token is ever written here.
CREATE TABLE agent_runner.audit (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  actor_name text NOT NULL,
  actor_role text NOT NULL,
  action text NOT NULL,
  task_id text,
  token_name text,
  remote text NOT NULL,
  status integer NOT NULL,
  node_id text
);
CREATE INDEX audit_at ON agent_runner.audit (at);

-- Who asked an answer or a stop of another node's task (the token's name and role, the address; never the
-- token): the node that runs the task writes it into the task's journal as an `audit` event.
ALTER TABLE agent_runner.task_requests ADD COLUMN requested_by jsonb;

-- Down Migration
ALTER TABLE agent_runner.task_requests DROP COLUMN requested_by;
DROP TABLE agent_runner.audit;
DROP TABLE agent_runner.api_tokens;
