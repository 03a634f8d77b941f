/**
 * What makes a forge's event a task or a follow-up (src/forge-events/, scripts/ci/forge-event.mjs): the
 * label, the assignee and the secret that signs the webhooks `serve` takes; the trigger phrase is the review
 * work's own `review.trigger`, one phrase for both.
 */
import * as z from 'zod';

export const forgeSchema = z
  .strictObject({
    label: z
      .string()
      .min(1)
      .default('agent-runner')
      .describe('an issue given this label (by a person with write access) becomes a task'),
    assignee: z
      .string()
      .min(1)
      .optional()
      .describe('an issue assigned to this forge user becomes a task')
      .meta({ defaultText: 'none' }),
    webhookSecret: z
      .string()
      .min(16)
      .optional()
      .describe(
        "the secret of the forge's webhooks (GitHub: the webhook's secret; GitLab: its secret token): `serve` takes `/api/webhooks/*` only with it; give it in the environment, never in the repository's file, which every worker reads",
      )
      .meta({ defaultText: 'none: the webhook routes answer 404' }),
  })
  .describe("The forge's events: which issues and comments instruct agent-runner, and the webhooks' secret.")
  .meta({ see: 'webhooks.md' });
