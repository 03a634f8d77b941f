/**
 * Admission of the sandbox's connections on the gateway's socket. Each held-open connection costs the runner a
 * descriptor, so a worker that opens 20,000 of them could use them all up (seen: EMFILE, then the task failed);
 * a package manager opens many at once too, and must not lose any. So: at most `maxConnections` are served at
 * once; more wait in a first-in-first-out queue of at most `queueSize`, each for at most `queueWaitMs`, paused
 * (nothing is read from them, so they cost a descriptor and no memory); a slot that frees (a connection
 * closes) goes to the oldest waiter. Only past the queue, or past its wait, is a connection closed, and that
 * is logged (the first time and every 1000th). The runner holds at most `maxConnections + queueSize` of the
 * sandbox's connections whatever the worker opens.
 */
import net, { type Socket } from 'node:net';
import type { GatewayLimits } from './gateway-options.js';

export interface ConnectionGateOptions {
  /** Connections served at once (`gateway.maxConnections`). */
  maxConnections: number;
  /** Connections waiting for a slot at most (`gateway.connectionQueue`); more are closed as they come. */
  queueSize: number;
  /** How long one waits for a slot before it is closed (`gateway.connectionQueueWait`). */
  queueWaitMs: number;
  /** Gives an admitted connection to the server that serves it (it is resumed right after). */
  serve(socket: Socket): void;
  log(line: string): void;
}

interface Waiter {
  socket: Socket;
  timer: NodeJS.Timeout;
}

/** The listening side of the gateway's socket; {@link server} is what listens. */
export class ConnectionGate {
  /** Listen on this one; every connection it accepts goes through the gate. */
  readonly server: net.Server;
  private active = 0;
  private readonly waiting: Waiter[] = [];
  private dropped = 0;
  private expired = 0;
  /** The most connections served and waiting at one time (for the log and the tests). */
  peak = { active: 0, waiting: 0 };

  /** A gate that hands what it admits to `server` (which then does not listen itself), with the gateway's limits. */
  static serving(server: net.Server, limits: GatewayLimits, log: (line: string) => void): ConnectionGate {
    const gate = new ConnectionGate({
      maxConnections: limits.maxConnections,
      queueSize: limits.connectionQueue,
      queueWaitMs: limits.connectionQueueWait,
      serve: (socket) => server.emit('connection', socket),
      log,
    });
    // An HTTP server starts enforcing headersTimeout and requestTimeout (a slowly sent request must not hold a
    // slot) when it starts listening, and stops when it closes: it follows the gate's listening and closing.
    gate.server.on('listening', () => server.emit('listening'));
    gate.server.on('close', () => server.close());
    return gate;
  }

  constructor(private readonly options: ConnectionGateOptions) {
    // Paused on accept: a waiting connection is not read at all (no buffers), only its descriptor is held.
    this.server = net.createServer({ pauseOnConnect: true }, (socket) => this.arrive(socket));
  }

  /** Connections being served now. */
  get activeCount(): number {
    return this.active;
  }

  /** Connections waiting for a slot now. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  private arrive(socket: Socket): void {
    if (this.active < this.options.maxConnections) return this.admit(socket);
    if (this.waiting.length >= this.options.queueSize) {
      this.dropped += 1;
      if (this.dropped === 1 || this.dropped % 1000 === 0)
        this.options.log(
          `worker connections over gateway.maxConnections (${this.options.maxConnections}) with gateway.connectionQueue (${this.options.queueSize}) full: ${this.dropped} dropped`,
        );
      socket.destroy();
      return;
    }
    const waiter: Waiter = {
      socket,
      timer: setTimeout(() => this.expire(waiter), this.options.queueWaitMs),
    };
    // A waiter is not read, so its own end is only seen when it is admitted; an error ends it at once.
    socket.on('error', () => undefined);
    this.waiting.push(waiter);
    this.peak.waiting = Math.max(this.peak.waiting, this.waiting.length);
  }

  private expire(waiter: Waiter): void {
    const index = this.waiting.indexOf(waiter);
    if (index === -1) return;
    this.waiting.splice(index, 1);
    this.expired += 1;
    if (this.expired === 1 || this.expired % 1000 === 0)
      this.options.log(
        `worker connections waited over gateway.connectionQueueWait (${this.options.queueWaitMs} ms) for a slot of gateway.maxConnections (${this.options.maxConnections}): ${this.expired} gave up waiting`,
      );
    waiter.socket.destroy();
  }

  private admit(socket: Socket): void {
    this.active += 1;
    this.peak.active = Math.max(this.peak.active, this.active);
    socket.once('close', () => {
      this.active -= 1;
      this.next();
    });
    this.options.serve(socket);
    socket.resume();
  }

  private next(): void {
    while (this.active < this.options.maxConnections) {
      const waiter = this.waiting.shift();
      if (waiter === undefined) return;
      clearTimeout(waiter.timer);
      // Closed while it waited (the gateway is closing, or it errored): the slot goes to the next one.
      if (waiter.socket.destroyed) continue;
      this.admit(waiter.socket);
    }
  }

  /** Closes every waiting connection (served ones are the server's to close). */
  closeWaiting(): void {
    for (const waiter of this.waiting.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.socket.destroy();
    }
  }
}
