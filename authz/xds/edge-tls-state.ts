import { EventEmitter } from 'node:events';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { parseCertificateValue } from '../../contract/edge-certificate-feed.js';
import { customDomainSecretName, tlsListenerFor, type TlsListenerTemplate } from './tls-listener.js';

type Node = Record<string, any>;

/** A custom hostname's certificate as Envoy gets it: the PEM chain (leaf first) and its key. */
export interface DomainCertificate {
  readonly chain: string;
  readonly key: string;
  /** The leaf's serial, for logs: never the chain or the key. */
  readonly serial: string;
}

export type TlsStateLog = (message: string, fields: Record<string, string>) => void;

/**
 * What authz's xDS server serves, as proto3 JSON: the HTTPS listener for the custom hostnames
 * that have a usable certificate, and each certificate as an SDS Secret. Fed by the edge's
 * certificate feed (contract/edge-certificate-feed.ts); emits 'change' when either moved.
 *
 * A value is checked before Envoy sees it, as the local edge does: a chain whose leaf does
 * not cover the hostname, or a key that is not the leaf's, is refused and the hostname keeps
 * the certificate it had (or gets no chain of its own). Envoy would refuse such a Secret
 * too, by NACK, but then the listener waiting for it would never warm.
 */
export class EdgeTlsState extends EventEmitter {
  readonly #certificates = new Map<string, DomainCertificate>();
  readonly #refused = new Map<string, string>();

  constructor(
    private readonly template: TlsListenerTemplate,
    private readonly log: TlsStateLog = () => undefined,
  ) {
    super();
  }

  get listenerName(): string {
    return this.template.name;
  }

  /** The feed's onValue: a hostname's stored value, or null once it is gone. */
  apply(hostname: string, value: string | null): void {
    if (value === null) {
      this.#refused.delete(hostname);
      if (this.#certificates.delete(hostname)) {
        this.log('custom domain certificate removed from Envoy', { domain: hostname });
        this.emit('change');
      }
      return;
    }
    const current = this.#certificates.get(hostname);
    if (this.#refused.get(hostname) === value) return;
    try {
      const certificate = checkedCertificate(hostname, value);
      if (current && current.chain === certificate.chain && current.key === certificate.key) return;
      this.#certificates.set(hostname, certificate);
      this.#refused.delete(hostname);
      this.log('custom domain certificate served to Envoy', { domain: hostname, serial: certificate.serial });
      this.emit('change');
    } catch (error) {
      this.#refused.set(hostname, value);
      this.log('custom domain certificate refused: the current one stays', {
        domain: hostname,
        reason: (error as Error).message,
        serving: current ? current.serial : "the agent domain's",
      });
    }
  }

  /** The HTTPS listener: a chain per hostname with a certificate, then the agent domain's. */
  listener(): Node {
    return tlsListenerFor(this.template, this.#certificates.keys());
  }

  /** The SDS Secret called `name`, or undefined when authz has no such certificate. */
  secret(name: string): Node | undefined {
    for (const [hostname, certificate] of this.#certificates) {
      if (customDomainSecretName(hostname) !== name) continue;
      return {
        name,
        tls_certificate: {
          certificate_chain: { inline_string: certificate.chain },
          private_key: { inline_string: certificate.key },
        },
      };
    }
    return undefined;
  }
}

function checkedCertificate(hostname: string, value: string): DomainCertificate {
  const { chain, key } = parseCertificateValue(value);
  // X509Certificate reads the first certificate of a PEM bundle: the leaf.
  const leaf = new X509Certificate(chain);
  if (!leaf.checkPrivateKey(createPrivateKey(key))) throw new Error("the key is not the certificate's");
  if (leaf.checkHost(hostname) === undefined) throw new Error(`the certificate does not cover ${hostname}`);
  return { chain, key, serial: leaf.serialNumber };
}
