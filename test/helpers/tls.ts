// Certificates for TLS tests, made on the spot with the openssl CLI in a temporary directory:
// self-signed server certificates (a second one stands in for a renewal) and a small CA with a
// client certificate for mutual TLS. Each comes with its files, its PEM text and its SHA-256
// fingerprint as openssl computes it, in the form node:tls reports (`AB:CD:...`).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** Bounds every openssl run; key generation on a P-256 curve takes milliseconds. */
const OPENSSL_TIMEOUT_MS = 15_000;
/** Short-lived: these certificates only exist for one test run. */
const VALIDITY_DAYS = '2';
// P-256 keys are quick to make; the tests exercise TLS, not key sizes.
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface Certificate {
  certFile: string;
  keyFile: string;
  certPem: string;
  keyPem: string;
  /** SHA-256 of the DER certificate, uppercase hex pairs joined by colons. */
  fingerprint256: string;
  /** The serial number in uppercase hex. */
  serial: string;
}

export interface TestPki {
  dir: string;
  /** Self-signed for CN=localhost, SAN DNS:localhost and IP:127.0.0.1. */
  server: Certificate;
  /** Another self-signed one for the same names (its own key and serial): the renewal. */
  renewed: Certificate;
  /** A CA that signs client certificates (mutual TLS). */
  ca: Certificate;
  /** A client certificate signed by `ca`. */
  client: Certificate;
  /** A self-signed client certificate no configured CA vouches for. */
  stranger: Certificate;
  remove(): Promise<void>;
}

async function openssl(args: string[]): Promise<string> {
  const { stdout } = await run('openssl', args, { timeout: OPENSSL_TIMEOUT_MS, encoding: 'utf8' });
  return stdout;
}

/** A random positive serial, so two certificates made in the same second still differ. */
function randomSerial(): string {
  return `0x${(randomBytes(8)[0]! & 0x7f).toString(16).padStart(2, '0')}${randomBytes(7).toString('hex')}`;
}

async function describeCertificate(certFile: string, keyFile: string): Promise<Certificate> {
  const [certPem, keyPem, printed] = await Promise.all([
    readFile(certFile, 'utf8'),
    readFile(keyFile, 'utf8'),
    openssl(['x509', '-in', certFile, '-noout', '-fingerprint', '-sha256', '-serial']),
  ]);
  // "sha256 Fingerprint=AB:CD:..." (OpenSSL 3) or "SHA256 Fingerprint=..." (1.1), then "serial=0123...".
  const fingerprint = /fingerprint=([0-9A-F:]+)/i.exec(printed)?.[1];
  const serial = /serial=([0-9A-F]+)/i.exec(printed)?.[1];
  if (!fingerprint || !serial) throw new Error(`unexpected openssl x509 output: ${printed}`);
  return { certFile, keyFile, certPem, keyPem, fingerprint256: fingerprint.toUpperCase(), serial: serial.toUpperCase() };
}

/** A self-signed server certificate for localhost and 127.0.0.1, written to `<dir>/<name>-{cert,key}.pem`. */
export async function selfSigned(dir: string, name: string, commonName = 'localhost'): Promise<Certificate> {
  const certFile = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  await openssl([
    'req', '-x509', ...NEW_KEY,
    '-keyout', keyFile, '-out', certFile,
    '-days', VALIDITY_DAYS, '-set_serial', randomSerial(),
    '-subj', `/CN=${commonName}`,
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  return describeCertificate(certFile, keyFile);
}

/** A certificate authority that may sign certificates (and nothing else is meant to use its key). */
export async function certificateAuthority(dir: string, name: string): Promise<Certificate> {
  const certFile = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  await openssl([
    'req', '-x509', ...NEW_KEY,
    '-keyout', keyFile, '-out', certFile,
    '-days', VALIDITY_DAYS, '-set_serial', randomSerial(),
    '-subj', `/CN=Switchyard test CA ${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return describeCertificate(certFile, keyFile);
}

/** A client certificate (extendedKeyUsage clientAuth) signed by `ca`. */
export async function clientSignedBy(ca: Certificate, dir: string, name: string): Promise<Certificate> {
  const certFile = join(dir, `${name}-cert.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  const csrFile = join(dir, `${name}.csr`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n');
  await openssl(['req', '-new', ...NEW_KEY, '-keyout', keyFile, '-out', csrFile, '-subj', `/CN=${name}`]);
  await openssl([
    'x509', '-req', '-in', csrFile,
    '-CA', ca.certFile, '-CAkey', ca.keyFile, '-set_serial', randomSerial(),
    '-days', VALIDITY_DAYS, '-extfile', extFile, '-out', certFile,
  ]);
  return describeCertificate(certFile, keyFile);
}

/** Everything the TLS tests need, in a fresh temporary directory (remove() deletes it). */
export async function makeTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-tls-'));
  try {
    const [server, renewed, ca, stranger] = await Promise.all([
      selfSigned(dir, 'server'),
      selfSigned(dir, 'renewed'),
      certificateAuthority(dir, 'ca'),
      selfSigned(dir, 'stranger', 'stranger'),
    ]);
    const client = await clientSignedBy(ca, dir, 'client');
    return { dir, server, renewed, ca, client, stranger, remove: () => rm(dir, { recursive: true, force: true }) };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
