// The certificate the STARTTLS servers present. Node can make keys and sign but has no API that
// builds an X.509 certificate, so this encodes the few DER structures of one (RFC 5280 §4.1)
// itself. A fresh pair per world means no private key is ever committed and nothing expires
// under the tests. P-256 keys take a millisecond to make, which keeps the world's start fast.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

export interface TlsCredentials {
  /** PKCS#8 private key, PEM. */
  key: string;
  /** Self-signed X.509 v3 certificate, PEM. */
  cert: string;
}

const OID_ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';
const OID_SHA256_WITH_RSA = '1.2.840.113549.1.1.11';
const OID_COMMON_NAME = '2.5.4.3';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';

/**
 * A self-signed certificate for `dnsNames` (the first is also the common name), valid from an hour
 * ago for 30 days. P-256 by default; `rsa` for a 2048-bit RSA key (Amazon SNS signs with one).
 */
export function createSelfSignedCertificate(
  dnsNames: readonly string[],
  keyType: 'ec' | 'rsa' = 'ec',
): TlsCredentials {
  const { privateKey, publicKey } =
    keyType === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const now = Date.now();
  const serial = randomBytes(16);
  // A serial number is a positive INTEGER without a leading zero octet (RFC 5280 §4.1.2.2).
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  const name = sequence(
    set(sequence(oid(OID_COMMON_NAME), der(0x0c, Buffer.from(dnsNames[0] ?? 'localhost')))),
  );
  // RFC 4055 §5: sha256WithRSAEncryption carries NULL parameters; RFC 5758 §3.2: ECDSA none.
  const signatureAlgorithm =
    keyType === 'rsa'
      ? sequence(oid(OID_SHA256_WITH_RSA), Buffer.from([0x05, 0x00]))
      : sequence(oid(OID_ECDSA_WITH_SHA256));
  const subjectAltName = sequence(...dnsNames.map((dnsName) => der(0x82, Buffer.from(dnsName))));

  const tbsCertificate = sequence(
    der(0xa0, der(0x02, Buffer.from([2]))), // version v3
    der(0x02, serial),
    signatureAlgorithm,
    name, // issuer: self-signed, so the subject
    sequence(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + 30 * 86_400_000))),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    der(0xa3, sequence(sequence(oid(OID_SUBJECT_ALT_NAME), der(0x04, subjectAltName)))),
  );
  // ECDSA signatures come DER-encoded by default, which is the form X.509 carries; RSA's are PKCS #1 v1.5.
  const signature = sign('sha256', tbsCertificate, privateKey);
  const certificate = sequence(tbsCertificate, signatureAlgorithm, der(0x03, Buffer.from([0]), signature));

  const base64 = certificate.toString('base64').replace(/.{64}/g, '$&\n');
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: `-----BEGIN CERTIFICATE-----\n${base64.trimEnd()}\n-----END CERTIFICATE-----\n`,
  };
}

/** One DER TLV: tag, definite length, contents. */
function der(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  let length: Buffer;
  if (body.length < 0x80) {
    length = Buffer.from([body.length]);
  } else {
    const octets: number[] = [];
    for (let remaining = body.length; remaining > 0; remaining >>= 8) octets.unshift(remaining & 0xff);
    length = Buffer.from([0x80 | octets.length, ...octets]);
  }
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

function sequence(...contents: Buffer[]): Buffer {
  return der(0x30, ...contents);
}

function set(...contents: Buffer[]): Buffer {
  return der(0x31, ...contents);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const octets = [first * 40 + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) base128.unshift((value & 0x7f) | 0x80);
    octets.push(...base128);
  }
  return der(0x06, Buffer.from(octets));
}

/** UTCTime YYMMDDHHMMSSZ, which RFC 5280 §4.1.2.5 requires for dates before 2050. */
function utcTime(date: Date): Buffer {
  const iso = date.toISOString();
  const digits =
    iso.slice(2, 4) +
    iso.slice(5, 7) +
    iso.slice(8, 10) +
    iso.slice(11, 13) +
    iso.slice(14, 16) +
    iso.slice(17, 19);
  return der(0x17, Buffer.from(`${digits}Z`));
}
