//! A CA made at start, a serving certificate for 127.0.0.1 and, for client-certificate
//! authentication, a client certificate for the admin: TLS paths are tested for real.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    SanType,
};
use tokio_rustls::rustls::{
    self,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
    server::WebPkiClientVerifier,
};

pub struct TlsMaterial {
    /// PEM of the CA that signed the serving certificate (goes into the kubeconfig).
    pub ca_pem: String,
    pub config: Arc<rustls::ServerConfig>,
    /// The admin's client certificate and key (PEM), when clients may present one.
    pub client: Option<ClientIdentity>,
}

/// A client certificate the server's CA issued, and its key.
#[derive(Clone, Debug)]
pub struct ClientIdentity {
    pub certificate_pem: String,
    pub key_pem: String,
    /// The certificate as the handshake presents it, to recognise it.
    pub der: Vec<u8>,
}

/// The CA, the serving certificate and (with `client_for`: the admin user's name, its CN) a
/// client certificate the server accepts.
pub fn generate(client_for: Option<&str>) -> anyhow::Result<TlsMaterial> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "capi-sandbox-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::from_params(&ca_params, &ca_key);

    let server_key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse()?));
    params
        .distinguished_name
        .push(DnType::CommonName, "capi-sandbox");
    let server_cert = params.signed_by(&server_key, &issuer)?;

    let client = match client_for {
        Some(user) => {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            // As kube-apiserver reads a client certificate: CN the user, O its groups.
            params.distinguished_name.push(DnType::CommonName, user);
            params
                .distinguished_name
                .push(DnType::OrganizationName, "system:masters");
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            let cert = params.signed_by(&key, &issuer)?;
            Some(ClientIdentity {
                certificate_pem: cert.pem(),
                key_pem: key.serialize_pem(),
                der: cert.der().to_vec(),
            })
        }
        None => None,
    };

    let chain = vec![CertificateDer::from(server_cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client {
        Some(_) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(CertificateDer::from(ca_cert.der().to_vec()))?;
            // Optional, as on a real apiserver: a bearer token still authenticates without one.
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        config: Arc::new(config),
        client,
    })
}
