//! Certificates for the tests of mutual TLS between the scheduler and its worker hosts: a CA, and
//! leaf certificates it signs, written as PEM files.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
};

/// A certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// Its certificate's PEM file.
    pub pem: PathBuf,
}

/// A CA named `name`, its certificate written to `dir/<name>.pem`.
pub fn ca(dir: &Path, name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA");
    let pem = dir.join(format!("{name}.pem"));
    std::fs::write(&pem, issuer.pem()).expect("write CA");
    Ca { issuer, pem }
}

impl Ca {
    /// A certificate for `dns_name` (server and client use), signed by this CA; its certificate and
    /// key files `dir/<file>.pem` and `dir/<file>.key`.
    pub fn leaf(&self, dir: &Path, file: &str, dns_name: &str) -> (PathBuf, PathBuf) {
        let mut params = CertificateParams::new(vec![dns_name.to_string()]).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, dns_name);
        params.extended_key_usages =
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        let (c, k) = (dir.join(format!("{file}.pem")), dir.join(format!("{file}.key")));
        std::fs::write(&c, cert.pem()).expect("write cert");
        std::fs::write(&k, key.serialize_pem()).expect("write key");
        (c, k)
    }
}
