/**
 * The fleet's webhook deliveries (agent_runner.webhook_deliveries): the first node to insert a delivery's id
 * takes it; every other insert of the same id, on any node, finds the row and takes nothing.
 */
import { DELIVERY_ID, type DeliveryStore } from '../forge-events/delivery-store.js';
import type { Forge } from '../forge-events/dispatch.js';
import type { ControlDatabase } from './control-database.js';

export class ControlDeliveryStore implements DeliveryStore {
  constructor(private readonly database: ControlDatabase) {}

  async claim(forge: Forge, id: string): Promise<boolean> {
    if (!DELIVERY_ID.test(id)) throw new Error(`not a delivery id: ${JSON.stringify(id.slice(0, 100))}`);
    const { rowCount } = await this.database.pool.query(
      `INSERT INTO agent_runner.webhook_deliveries (forge, delivery_id) VALUES ($1, $2)
       ON CONFLICT (forge, delivery_id) DO NOTHING`,
      [forge, id],
    );
    return rowCount === 1;
  }
}
