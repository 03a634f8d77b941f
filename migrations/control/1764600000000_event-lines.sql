-- Up Migration
-- A journal line is kept as the text the journal holds, not as jsonb: jsonb refuses what a JSON line may carry
-- (a NUL as \u0000, a lone surrogate as \ud800: a worker's output, a model's reply) and rewrites what it takes
-- (key order, spaces), so a jsonb copy could neither hold every line nor give it back as it was. text holds
-- every line agent-runner writes (JSON.stringify escapes every control and every lone surrogate) byte for byte.
ALTER TABLE agent_runner.events ADD COLUMN line text;
UPDATE agent_runner.events SET line = event::text;
ALTER TABLE agent_runner.events ALTER COLUMN line SET NOT NULL;
ALTER TABLE agent_runner.events DROP COLUMN event;

-- A line as jsonb for queries (`agent_runner.event_json(line)->>'type'`), NULL for a line jsonb cannot hold
-- (`line::jsonb` would fail the whole query on it). The line stays the record.
CREATE FUNCTION agent_runner.event_json(line text) RETURNS jsonb
  LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  RETURN line::jsonb;
EXCEPTION WHEN data_exception THEN
  RETURN NULL;
END
$$;

-- Down Migration
DROP FUNCTION agent_runner.event_json(text);
-- A line jsonb cannot hold (a \u0000 or a lone surrogate's escape) makes this fail: nothing is dropped then.
ALTER TABLE agent_runner.events ADD COLUMN event jsonb;
UPDATE agent_runner.events SET event = line::jsonb;
ALTER TABLE agent_runner.events ALTER COLUMN event SET NOT NULL;
ALTER TABLE agent_runner.events DROP COLUMN line;
