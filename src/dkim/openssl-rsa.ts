// RSA-SHA256 signatures (RSASSA-PKCS1-v1_5, RFC 8017 §8.2) made by the system's OpenSSL 3
// (libcrypto.so.3) through bun:ffi, for DKIM signing.
//
// Measured reason: Bun's node:crypto makes an RSA-2048 signature with BoringSSL in 0.65-0.75 ms
// on this 2-core machine, OpenSSL 3 in 0.30-0.35 ms (`openssl speed rsa2048` agrees), and that
// signature is most of the CPU an outgoing message costs (bench/outbound). bun:ffi is marked
// experimental, so the binding is kept to six C functions on plain pointers, and each key proves
// it before use: its OpenSSL signature of a probe must equal node:crypto's byte for byte
// (PKCS#1 v1.5 signatures are deterministic), else that key signs with node:crypto. Without
// libcrypto.so.3 (or with INBOXD_DKIM_RSA=builtin) node:crypto signs everything.
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";
import { sign, type KeyObject } from "node:crypto";

export interface OpensslRsaKey {
  /** The rsa-sha256 signature of `data`. */
  sign(data: Uint8Array): Buffer;
}

const RSA_SIGNATURE_MAX_BYTES = 1024; // up to 8192-bit keys
const PROBE = Buffer.from("inboxd: OpenSSL and node:crypto must make the same signature");

function openLibcrypto() {
  return dlopen("libcrypto.so.3", {
    d2i_AutoPrivateKey: { args: [FFIType.ptr, FFIType.ptr, FFIType.i64], returns: FFIType.ptr },
    EVP_PKEY_free: { args: [FFIType.ptr], returns: FFIType.void },
    EVP_MD_CTX_new: { args: [], returns: FFIType.ptr },
    EVP_MD_CTX_free: { args: [FFIType.ptr], returns: FFIType.void },
    EVP_sha256: { args: [], returns: FFIType.ptr },
    EVP_DigestSignInit: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    EVP_DigestSign: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i32 },
  }).symbols;
}

type Libcrypto = ReturnType<typeof openLibcrypto>;

/** Loaded once per thread; null where it cannot be. */
let libcrypto: Libcrypto | null | undefined;

function loadedLibcrypto(): Libcrypto | null {
  if (libcrypto === undefined) {
    try {
      libcrypto = openLibcrypto();
    } catch {
      libcrypto = null;
    }
  }
  return libcrypto;
}

/** Whether this thread can load OpenSSL 3's libcrypto. */
export const opensslLoads = (): boolean => loadedLibcrypto() !== null;

// The EVP_PKEY of a key no longer referenced is freed with it.
const keyHandles = new FinalizationRegistry<Pointer>((handle) => libcrypto?.EVP_PKEY_free(handle));

/** The key loaded into OpenSSL, once it signed the probe as node:crypto does; undefined otherwise. */
export function opensslRsaKey(privateKey: KeyObject): OpensslRsaKey | undefined {
  const lib = loadedLibcrypto();
  if (!lib || privateKey.asymmetricKeyType !== "rsa") return undefined;
  const der = privateKey.export({ type: "pkcs8", format: "der" });
  // d2i_* read from *pp and move it past what they read: pp points at a pointer to the DER bytes.
  const pp = new BigUint64Array([BigInt(ptr(der))]);
  const handle = lib.d2i_AutoPrivateKey(null, ptr(pp), der.length) as Pointer | null;
  if (!handle) return undefined;
  const key: OpensslRsaKey = { sign: (data) => signWith(lib, handle, data) };
  keyHandles.register(key, handle);
  try {
    return key.sign(PROBE).equals(sign("sha256", PROBE, privateKey)) ? key : undefined;
  } catch {
    return undefined;
  }
}

function signWith(lib: Libcrypto, handle: Pointer, data: Uint8Array): Buffer {
  const signature = Buffer.alloc(RSA_SIGNATURE_MAX_BYTES);
  const length = new BigUint64Array([BigInt(signature.length)]);
  const context = lib.EVP_MD_CTX_new();
  if (!context) throw new Error("OpenSSL: EVP_MD_CTX_new failed");
  try {
    if (lib.EVP_DigestSignInit(context, null, lib.EVP_sha256(), null, handle) !== 1) throw new Error("OpenSSL: EVP_DigestSignInit failed");
    if (lib.EVP_DigestSign(context, ptr(signature), ptr(length), ptr(data), data.length) !== 1) throw new Error("OpenSSL: EVP_DigestSign failed");
  } finally {
    lib.EVP_MD_CTX_free(context);
  }
  return signature.subarray(0, Number(length[0]));
}
