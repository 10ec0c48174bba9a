//! The repository extension over HTTP, as Triton serves it: `POST /v2/repository/index` (a JSON
//! array of `{name, version, state, reason}`), `POST /v2/repository/models/{name}/load` and
//! `.../unload` (200 with an empty body, or an error object).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::error::ServeError;
use super::server::Server;

/// The most a control request's body may hold: a few parameters.
const MAX_CONTROL_BODY: usize = 64 << 10;

async fn body_json(body: Body) -> Result<Option<Value>, ServeError> {
    let bytes = axum::body::to_bytes(body, MAX_CONTROL_BODY).await.map_err(|_| {
        ServeError::BadRequest(format!("a repository request's body is at most {MAX_CONTROL_BODY} bytes"))
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ServeError::BadRequest(format!("the body is not JSON: {e}")))
}

/// `POST /v2/repository/index`.
pub async fn index(State(s): State<Arc<Server>>, req: Request) -> Response {
    let run = async {
        let control = s.control()?;
        let body = body_json(req.into_body()).await?;
        let ready = body.as_ref().and_then(|b| b.get("ready")).and_then(Value::as_bool).unwrap_or(false);
        Ok::<_, ServeError>(axum::Json(json!(control.index(&s, ready))).into_response())
    };
    run.await.unwrap_or_else(super::http::error)
}

/// `POST /v2/repository/models/{name}/load`. A config or files sent with it are refused: a model's
/// folder is its only definition.
pub async fn load(State(s): State<Arc<Server>>, Path(name): Path<String>, req: Request) -> Response {
    let run = async {
        let control = s.control()?;
        let body = body_json(req.into_body()).await?;
        let params = body.as_ref().and_then(|b| b.get("parameters")).and_then(Value::as_object);
        if let Some(key) = params.and_then(|p| p.keys().find(|k| *k == "config" || k.starts_with("file:"))) {
            return Err(ServeError::BadRequest(format!(
                "load parameter '{}' is not taken: edit the model's folder and load it again",
                super::models::cut(key)
            )));
        }
        control.load(&s, &name).await?;
        Ok(().into_response())
    };
    run.await.unwrap_or_else(super::http::error)
}

/// `POST /v2/repository/models/{name}/unload`.
pub async fn unload(State(s): State<Arc<Server>>, Path(name): Path<String>, req: Request) -> Response {
    let run = async {
        let control = s.control()?;
        body_json(req.into_body()).await?;
        control.unload(&s, &name).await?;
        Ok(().into_response())
    };
    run.await.unwrap_or_else(super::http::error)
}
