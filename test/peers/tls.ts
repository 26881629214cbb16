// Certificates for test peers: the same generator the SMTP server uses at run time.
export { selfSignedCert, type PemCertificate } from "../../src/smtp/self-signed";
