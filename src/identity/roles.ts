/**
 * The roles a token carries, lowest first: `viewer` reads tasks, their events and notes; `operator` also
 * starts, answers, stops and resumes tasks; `admin` also manages tokens, reads the audit log and the fleet.
 */
import * as z from 'zod';

export const roleSchema = z.enum(['viewer', 'operator', 'admin']);
export type Role = z.infer<typeof roleSchema>;

/** Every role, lowest first. */
export const ROLES: readonly Role[] = roleSchema.options;

/** Whether a token of role `have` may do what needs `need`. */
export function roleAllows(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/**
 * A token's name: what the audit log and the page show of who did something, so it is plain (lower-case
 * letters, digits, `.`, `_`, `-`): no markup, no mention, no link can be made of it.
 */
export const tokenNameSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,62}$/,
    'a name is 1 to 63 lower-case letters, digits, ".", "_" or "-", starting with a letter or digit',
  );

/** Who made a call: the token's name and role (the server's own start-up token is `server`, an admin). */
export const actorSchema = z.object({ name: z.string(), role: roleSchema });
export type Actor = z.infer<typeof actorSchema>;
