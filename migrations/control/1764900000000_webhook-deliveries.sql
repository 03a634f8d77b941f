-- Up Migration
-- The forges' webhook deliveries the fleet has taken (GitHub's X-GitHub-Delivery, GitLab's X-Gitlab-Event-UUID):
-- the primary key makes a delivery that reaches two nodes, or arrives twice, one task.
CREATE TABLE agent_runner.webhook_deliveries (
  forge text NOT NULL CHECK (forge IN ('github', 'gitlab')),
  delivery_id text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (forge, delivery_id)
);

-- Down Migration
DROP TABLE agent_runner.webhook_deliveries;
