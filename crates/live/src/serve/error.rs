//! What a served request can fail with, and how each transport says it: an HTTP status with
//! `{"error": "..."}`, or a gRPC status code with the message.

use std::time::Duration;

/// A request the server did not answer with a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ServeError {
    /// The request is malformed: bad JSON, wrong datatype or shape, a bad parameter.
    #[error("{0}")]
    BadRequest(String),
    /// No such model (or version).
    #[error("{0}")]
    NotFound(String),
    /// Missing or wrong bearer token.
    #[error("missing or wrong bearer token: send `Authorization: Bearer <token>`")]
    Unauthorized,
    /// Missing or wrong control token on a load or unload.
    #[error(
        "missing or wrong control token: send `Authorization: Bearer <control token>`, the token of the server's --control-token-file (the inference token does not load or unload)"
    )]
    UnauthorizedControl,
    /// Refused whoever asks: model control is off, or the request is one a web page could send
    /// cross-site.
    #[error("{0}")]
    Forbidden(String),
    /// The body or a tensor is over the server's limit.
    #[error("{0}")]
    TooLarge(String),
    /// No worker the caps allow can meet the deadline now.
    #[error("{message}")]
    Overloaded {
        /// What happened.
        message: String,
        /// When to retry.
        retry_after: Duration,
    },
    /// Not ready, or draining.
    #[error("{0}")]
    Unavailable(String),
    /// The kernel failed, or the server could not finish the request.
    #[error("{0}")]
    Internal(String),
}

impl ServeError {
    /// The HTTP status.
    pub fn http_status(&self) -> u16 {
        match self {
            ServeError::BadRequest(_) => 400,
            ServeError::Unauthorized | ServeError::UnauthorizedControl => 401,
            ServeError::Forbidden(_) => 403,
            ServeError::NotFound(_) => 404,
            ServeError::TooLarge(_) => 413,
            ServeError::Overloaded { .. } => 429,
            ServeError::Internal(_) => 500,
            ServeError::Unavailable(_) => 503,
        }
    }

    /// The gRPC status code.
    pub fn grpc_code(&self) -> tonic::Code {
        match self {
            ServeError::BadRequest(_) => tonic::Code::InvalidArgument,
            ServeError::Unauthorized | ServeError::UnauthorizedControl => tonic::Code::Unauthenticated,
            ServeError::Forbidden(_) => tonic::Code::PermissionDenied,
            ServeError::NotFound(_) => tonic::Code::NotFound,
            ServeError::TooLarge(_) | ServeError::Overloaded { .. } => tonic::Code::ResourceExhausted,
            ServeError::Internal(_) => tonic::Code::Internal,
            ServeError::Unavailable(_) => tonic::Code::Unavailable,
        }
    }

    /// The label metrics count it under.
    pub fn outcome(&self) -> &'static str {
        match self {
            ServeError::BadRequest(_) | ServeError::NotFound(_) | ServeError::TooLarge(_) => "invalid",
            ServeError::Unauthorized | ServeError::UnauthorizedControl => "unauthorized",
            ServeError::Forbidden(_) => "forbidden",
            ServeError::Overloaded { .. } => "rejected",
            ServeError::Unavailable(_) => "unavailable",
            ServeError::Internal(_) => "failed",
        }
    }
}

/// The outcome label of an HTTP error status (what [`ServeError::outcome`] says of its error).
pub fn outcome_of_http(status: u16) -> &'static str {
    match status {
        401 => "unauthorized",
        403 => "forbidden",
        429 => "rejected",
        503 => "unavailable",
        500..=599 => "failed",
        _ => "invalid",
    }
}

/// The outcome label of a gRPC status code.
pub fn outcome_of_grpc(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Unauthenticated => "unauthorized",
        tonic::Code::PermissionDenied => "forbidden",
        tonic::Code::ResourceExhausted => "rejected",
        tonic::Code::Unavailable => "unavailable",
        tonic::Code::Internal | tonic::Code::Unknown | tonic::Code::DeadlineExceeded => "failed",
        _ => "invalid",
    }
}

impl From<ServeError> for tonic::Status {
    fn from(e: ServeError) -> tonic::Status {
        let mut status = tonic::Status::new(e.grpc_code(), e.to_string());
        if let ServeError::Overloaded { retry_after, .. } = &e
            && let Ok(v) = format!("{}", retry_after.as_millis().max(1)).parse()
        {
            status.metadata_mut().insert("retry-after-ms", v);
        }
        status
    }
}
