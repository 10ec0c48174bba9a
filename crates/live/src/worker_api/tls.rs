//! Mutual TLS between the scheduler and its worker hosts (rustls through tonic), from PEM files.
//! Each side presents a certificate and trusts only peers signed by its CA file; a worker is
//! dialled by address, so its certificate is checked against one fixed name (`spork-worker` by
//! default) rather than the address. TLS is on by default for anything outside loopback.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// The name a worker's certificate carries unless told otherwise.
pub const DEFAULT_WORKER_NAME: &str = "spork-worker";

/// One side's certificate, key and the CA it trusts peers by (PEM files).
#[derive(Clone, Debug, PartialEq)]
pub struct TlsFiles {
    /// Its own certificate (chain).
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// The CA bundle a peer's certificate must chain to.
    pub ca: PathBuf,
}

/// A TLS file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file cannot be read.
    #[error("cannot read the TLS {what} {path}: {source} (fix: give a readable PEM file)")]
    Read {
        /// Certificate, key or CA.
        what: &'static str,
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not PEM.
    #[error(
        "the TLS {what} {path} is not PEM (no '-----BEGIN' line; fix: convert it, e.g. `openssl x509 -in F -out F.pem`)"
    )]
    NotPem {
        /// Certificate, key or CA.
        what: &'static str,
        /// Which file.
        path: PathBuf,
    },
    /// Plaintext to a peer outside loopback without saying so.
    #[error(
        "{0} is not a loopback address: the worker API needs mutual TLS there (fix: give the certificate, key and CA files, or allow plaintext explicitly with --insecure)"
    )]
    PlaintextOutsideLoopback(SocketAddr),
}

impl TlsFiles {
    /// The three files read and checked to be PEM.
    fn load(&self) -> Result<(Identity, Certificate), TlsError> {
        let cert = read_pem("certificate", &self.cert)?;
        let key = read_pem("key", &self.key)?;
        let ca = read_pem("CA", &self.ca)?;
        Ok((Identity::from_pem(cert, key), Certificate::from_pem(ca)))
    }

    /// The scheduler's side: present this certificate, trust workers whose certificate chains to the
    /// CA and names `worker_name`.
    pub fn client(&self, worker_name: &str) -> Result<ClientTlsConfig, TlsError> {
        let (identity, ca) = self.load()?;
        Ok(ClientTlsConfig::new().identity(identity).ca_certificate(ca).domain_name(worker_name))
    }

    /// A worker's side: present this certificate, and require every scheduler to present one that
    /// chains to the CA (a scheduler without one, or with another CA's, fails the handshake).
    pub fn server(&self) -> Result<ServerTlsConfig, TlsError> {
        let (identity, ca) = self.load()?;
        Ok(ServerTlsConfig::new().identity(identity).client_ca_root(ca).client_auth_optional(false))
    }
}

/// Checks that plaintext is allowed for `addr`: loopback always, anything else only when
/// `insecure` says so.
pub fn plaintext_allowed(addr: SocketAddr, insecure: bool) -> Result<(), TlsError> {
    if insecure || addr.ip().is_loopback() { Ok(()) } else { Err(TlsError::PlaintextOutsideLoopback(addr)) }
}

fn read_pem(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read { what, path: path.into(), source })?;
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(TlsError::NotPem { what, path: path.into() });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plaintext_is_refused_outside_loopback_unless_allowed() {
        assert!(plaintext_allowed("127.0.0.1:7070".parse().unwrap(), false).is_ok());
        assert!(plaintext_allowed("[::1]:7070".parse().unwrap(), false).is_ok());
        let err = plaintext_allowed("10.0.0.5:7070".parse().unwrap(), false).unwrap_err();
        assert!(err.to_string().contains("10.0.0.5:7070") && err.to_string().contains("--insecure"));
        assert!(plaintext_allowed("10.0.0.5:7070".parse().unwrap(), true).is_ok());
    }

    #[test]
    fn missing_and_non_pem_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, b"not a certificate").unwrap();
        let files = TlsFiles { cert: junk.clone(), key: junk.clone(), ca: dir.path().join("absent.pem") };
        let err = files.server().unwrap_err().to_string();
        assert!(err.contains("junk.pem") && err.contains("not PEM"), "{err}");
        let files = TlsFiles { cert: dir.path().join("absent.pem"), ..files };
        assert!(files.client("spork-worker").unwrap_err().to_string().contains("absent.pem"));
    }
}
