/**
 * The first-admin setup gate of an isolate of `serve --workers N`: one
 * setup at a time in the whole process, not only in this isolate. The
 * isolates share the setup token, and two setups running at once on two
 * isolates would both find no admin and both create one.
 *
 * @module
 */

import { SetupGate } from "../auth/setup_gate.ts";
import type { PeerLink } from "./link.ts";

/** `SetupGate` whose tasks also hold the process-wide lock of a `PeerLink`. */
export class SharedSetupGate extends SetupGate {
  readonly #link: PeerLink;

  /** A gate locked across the isolates of `link`. */
  constructor(link: PeerLink) {
    super();
    this.#link = link;
  }

  override run<T>(task: () => Promise<T>): Promise<T> {
    return super.run(() => this.#link.exclusive(task));
  }
}
