import { dlopen, FFIType, ptr } from "bun:ffi";
import { generateKeyPairSync, verify, createPublicKey } from "node:crypto";
const lib = dlopen("libcrypto.so.3", {
  d2i_AutoPrivateKey: { args: [FFIType.ptr, FFIType.ptr, FFIType.i64], returns: FFIType.ptr },
  EVP_MD_CTX_new: { args: [], returns: FFIType.ptr },
  EVP_MD_CTX_free: { args: [FFIType.ptr], returns: FFIType.void },
  EVP_sha256: { args: [], returns: FFIType.ptr },
  EVP_DigestSignInit: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  EVP_DigestSign: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i32 },
});
const s = lib.symbols;
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const der = privateKey.export({ type: "pkcs8", format: "der" });
const pp = new BigUint64Array([BigInt(ptr(der))]);
const pkey = s.d2i_AutoPrivateKey(null, ptr(pp), der.length);
const md = s.EVP_sha256();
const sig = Buffer.alloc(256); const sigLen = new BigUint64Array(1);
function signIt(data: Buffer) {
  const ctx = s.EVP_MD_CTX_new();
  try {
    if (s.EVP_DigestSignInit(ctx, null, md, null, pkey) !== 1) throw new Error("init");
    sigLen[0] = 256n;
    if (s.EVP_DigestSign(ctx, ptr(sig), ptr(sigLen), ptr(data), data.length) !== 1) throw new Error("sign");
    return Buffer.from(sig.subarray(0, Number(sigLen[0])));
  } finally { s.EVP_MD_CTX_free(ctx); }
}
const data = Buffer.alloc(600, 97);
console.log("verifies", verify("sha256", data, publicKey, signIt(data)));
for (let i = 0; i < 50; i++) signIt(data);
const c0 = process.cpuUsage(); const t = performance.now(); for (let i = 0; i < 2000; i++) signIt(data); const c = process.cpuUsage(c0);
console.log("ffi sign", ((performance.now() - t) / 2000 * 1000).toFixed(0), "µs wall", ((c.user + c.system) / 2000).toFixed(0), "µs cpu");
