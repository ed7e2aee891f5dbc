/**
 * Counts connections that have not completed `connect`, in total and per remote address. Each one may cost up to
 * the pre-auth frame limit while it is being read; the caps bound what strangers can make the gateway hold at
 * once. A connection counts from its upgrade until it authenticates or closes.
 */
export interface PreAuthCaps {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

/** Call once the connection authenticated or closed; later calls do nothing. */
export type ReleaseSlot = () => void;

export type Admission = { ok: true; release: ReleaseSlot } | { ok: false; reason: string };

export class PreAuthAdmission {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(private readonly caps: PreAuthCaps) {}

  get pending(): number {
    return this.total;
  }

  admit(address: string): Admission {
    const fromAddress = this.byAddress.get(address) ?? 0;
    if (this.total >= this.caps.maxConnections) {
      return { ok: false, reason: `too many unauthenticated connections (limit ${this.caps.maxConnections})` };
    }
    if (fromAddress >= this.caps.maxConnectionsPerAddress) {
      return {
        ok: false,
        reason: `too many unauthenticated connections from this address (limit ${this.caps.maxConnectionsPerAddress})`,
      };
    }
    this.total++;
    this.byAddress.set(address, fromAddress + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        const left = (this.byAddress.get(address) ?? 1) - 1;
        if (left > 0) this.byAddress.set(address, left);
        else this.byAddress.delete(address);
      },
    };
  }
}
