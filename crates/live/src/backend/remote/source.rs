//! Where worker hosts are found: a static `host:port`, or `dns:NAME:PORT` (every address the name
//! resolves to, re-resolved periodically: a Kubernetes headless Service gives one per worker pod).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::str::FromStr;

/// One `--worker` or `--workers` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `host:port`: one host (a name is resolved like DNS, but its hosts are never dropped when a
    /// lookup fails).
    Static(String),
    /// `dns:NAME:PORT`: every address of `NAME`.
    Dns {
        /// The name.
        name: String,
        /// The workers' port.
        port: u16,
    },
}

/// A worker source that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "worker source '{given}': {why} (fix: write HOST:PORT, e.g. 10.0.0.5:7070, or dns:NAME:PORT, e.g. dns:spork-workers.spork.svc:7070)"
)]
pub struct SourceError {
    given: String,
    why: &'static str,
}

impl FromStr for Source {
    type Err = SourceError;

    fn from_str(s: &str) -> Result<Source, SourceError> {
        let err = |why| SourceError { given: s.into(), why };
        let (rest, dns) = match s.strip_prefix("dns:") {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| err("no port"))?;
        let port: u16 = port.parse().map_err(|_| err("the port is not a number from 1 to 65535"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(err("an empty host or port 0"));
        }
        Ok(if dns { Source::Dns { name: host.into(), port } } else { Source::Static(rest.into()) })
    }
}

impl Source {
    /// Its addresses now; an error if the name does not resolve.
    pub async fn resolve(&self) -> std::io::Result<BTreeSet<SocketAddr>> {
        let found = match self {
            Source::Static(hp) => tokio::net::lookup_host(hp.as_str()).await?.collect(),
            Source::Dns { name, port } => tokio::net::lookup_host((name.as_str(), *port)).await?.collect(),
        };
        Ok(found)
    }

    /// Whether its hosts stay listed when a lookup fails or stops returning them.
    pub fn is_static(&self) -> bool {
        matches!(self, Source::Static(_))
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Static(hp) => write!(f, "{hp}"),
            Source::Dns { name, port } => write!(f, "dns:{name}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_and_dns_sources_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!("10.0.0.5:7070".parse(), Ok(Source::Static("10.0.0.5:7070".into())));
        assert_eq!("[::1]:7070".parse(), Ok(Source::Static("[::1]:7070".into())));
        assert_eq!(
            "dns:spork-workers.spork.svc:7070".parse(),
            Ok(Source::Dns { name: "spork-workers.spork.svc".into(), port: 7070 })
        );
        for bad in ["10.0.0.5", "dns:name", "host:http", ":7070", "dns::7070", "h:0"] {
            let e = bad.parse::<Source>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("fix"), "{bad}: {e}");
        }
    }

    #[tokio::test]
    async fn a_loopback_name_resolves() {
        let found = "localhost:7070".parse::<Source>().unwrap().resolve().await.unwrap();
        assert!(found.iter().all(|a| a.ip().is_loopback() && a.port() == 7070) && !found.is_empty());
    }
}
