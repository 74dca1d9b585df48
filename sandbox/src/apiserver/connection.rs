//! Serving a connection: in process as a tower service (`ApiService`), or on loopback over
//! HTTP(S) (`Serving`), each request read whole (up to the size limit) and handed to the
//! handlers.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;

use super::kubeconfig::{KubeconfigEntry, kubeconfig};
use super::shared::Shared;

/// Serves one connection; `by_certificate`: its client presented the admin's certificate.
pub(super) async fn serve_connection<S>(shared: Arc<Shared>, stream: S, by_certificate: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |mut request: Request<hyper::body::Incoming>| {
        if by_certificate {
            request
                .extensions_mut()
                .insert(super::handler::ClientCertificate);
        }
        let response = respond(shared.clone(), request);
        // A concrete error type keeps hyper's connection future `Send` for every lifetime.
        async move { response.await.map_err(std::io::Error::other) }
    });
    let builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    let _ = builder
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

/// How much of an oversized body is read (and dropped) before the connection is closed instead.
const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// Reads the body (up to the apiserver's limit) and serves the request; `Err` closes the connection.
fn respond<B>(
    shared: Arc<Shared>,
    request: Request<B>,
) -> Pin<Box<dyn Future<Output = Result<Response<super::body::Body>, BoxError>> + Send>>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (mut parts, body) = request.into_parts();
    // In flight from here: reading the body is part of serving the request.
    parts
        .extensions
        .insert(super::handler::Arrived(std::time::Instant::now()));
    Box::pin(async move {
        let mut body = std::pin::pin!(body);
        // Up to the apiserver's limit; beyond it the rest is read and dropped (up to a bound), so
        // that the client finishes sending and reads the 413 instead of a broken pipe.
        let mut bytes = bytes::BytesMut::new();
        let mut read = 0usize;
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(Into::into)?.into_data() else {
                continue;
            };
            read += data.len();
            if read > DRAIN_LIMIT {
                return Err("request body far beyond the limit".into());
            }
            if read <= super::handler::MAX_REQUEST_BYTES {
                bytes.extend_from_slice(&data);
            }
        }
        if read > super::handler::MAX_REQUEST_BYTES {
            return Ok(super::handler::error_response(
                &super::status::ApiError::request_too_large(super::handler::MAX_REQUEST_BYTES),
            ));
        }
        let bytes = bytes.freeze();
        respond_bytes(shared, Request::from_parts(parts, bytes)).await
    })
}

async fn respond_bytes(
    shared: Arc<Shared>,
    request: Request<Bytes>,
) -> Result<Response<super::body::Body>, BoxError> {
    super::handler::handle(shared, request)
        .await
        .ok_or_else(|| "connection dropped by an injected fault".into())
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The server as a `tower::Service`, for in-process clients.
#[derive(Clone)]
pub struct ApiService {
    pub(super) shared: Arc<Shared>,
}

impl<B> tower::Service<Request<B>> for ApiService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<super::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // In process there is no handshake: the harness holds the admin's certificate.
        if self.shared.options.client_certificates {
            request
                .extensions_mut()
                .insert(super::handler::ClientCertificate);
        }
        respond(self.shared.clone(), request)
    }
}

/// A server listening on loopback; dropping it stops serving.
pub struct Serving {
    pub url: String,
    pub addr: SocketAddr,
    /// PEM of the CA to trust, when serving TLS.
    pub ca_pem: Option<String>,
    /// The admin's client certificate, when clients authenticate with one.
    pub client: Option<super::tls::ClientIdentity>,
    pub token: Option<String>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// A kubeconfig cluster + user + context entry for this server, merged into one document by
    /// [`kubeconfig`].
    pub fn kubeconfig_entry(&self, context: &str) -> KubeconfigEntry {
        KubeconfigEntry {
            context: context.to_string(),
            server: self.url.clone(),
            ca_pem: self.ca_pem.clone(),
            client: self.client.clone(),
            token: self.token.clone(),
            namespace: Some("default".to_string()),
        }
    }

    /// A kube client over HTTP(S), as the plugin would build it from the kubeconfig.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let text = kubeconfig(&[self.kubeconfig_entry("sandbox")]);
        let config: kube::config::Kubeconfig = serde_saphyr::from_str(&text)?;
        let config = kube::Config::from_custom_kubeconfig(
            config,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        Ok(kube::Client::try_from(config)?)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}
