-- Up Migration
-- The question a task waits on (the Meta-agent's ask_human), written by the node that runs it in the same
-- statement as the journal line that asked it, cleared by the line that answered it (`human`), by the task's end
-- and when another node takes the task: what every node shows in its list, the task's detail and its page.
ALTER TABLE agent_runner.tasks ADD COLUMN question text;

-- Down Migration
ALTER TABLE agent_runner.tasks DROP COLUMN question;
