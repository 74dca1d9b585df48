//! The body of the sandbox's answers: whole answers and watch streams, boxed into one type.

use bytes::Bytes;
use futures::{Stream, TryStreamExt};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body every answer carries.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A whole answer.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A streamed answer (a watch), chunk by chunk.
pub fn stream<S>(chunks: S) -> Body
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
{
    StreamBody::new(chunks.map_ok(Frame::data).map_err(BoxError::from)).boxed_unsync()
}
