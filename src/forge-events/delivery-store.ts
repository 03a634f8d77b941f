/**
 * The deliveries a server has taken, remembered so the same delivery (GitHub's `X-GitHub-Delivery`, GitLab's
 * `X-Gitlab-Event-UUID`) makes one task however often it arrives: a forge redelivers, a proxy retries, two
 * nodes of a fleet get it. One server: a file per delivery in the state directory, created exclusively; a
 * fleet: a row of the control database (src/control/webhook-deliveries.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Forge } from './dispatch.js';

/** A delivery id as the forges send it (a GUID or UUID): anything else is refused before it names a file. */
export const DELIVERY_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,99}$/;

export interface DeliveryStore {
  /** True the first time `forge`'s delivery `id` is claimed, false ever after (on this server or fleet). */
  claim(forge: Forge, id: string): Promise<boolean>;
}

/** One server's deliveries: `<state>/webhook-deliveries/<forge>-<id>`, each written with O_EXCL. */
export class FileDeliveryStore implements DeliveryStore {
  private readonly directory: string;

  constructor(stateDir: string) {
    this.directory = path.join(stateDir, 'webhook-deliveries');
  }

  async claim(forge: Forge, id: string): Promise<boolean> {
    if (!DELIVERY_ID.test(id)) throw new Error(`not a delivery id: ${JSON.stringify(id.slice(0, 100))}`);
    await mkdir(this.directory, { recursive: true });
    try {
      await writeFile(path.join(this.directory, `${forge}-${id}`), `${new Date().toISOString()}\n`, {
        flag: 'wx',
      });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }
}
