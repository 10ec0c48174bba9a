//! The repository extension over HTTP, as Triton serves it: `POST /v2/repository/index` (a JSON
//! array of `{name, version, state, reason}`), `POST /v2/repository/models/{name}/load` and
//! `.../unload` (200 with an empty body, or an error object).
//!
//! Load and unload are behind their own [`gate`]: refused under `--model-control none`, the
//! control token (not the inference token), and nothing a web page could send cross-site.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::error::ServeError;
use super::server::Server;

/// The load and unload routes, behind [`gate`].
pub fn control_routes(server: Arc<Server>) -> Router<Arc<Server>> {
    Router::new()
        .route("/v2/repository/models/{name}/load", post(load))
        .route("/v2/repository/models/{name}/unload", post(unload))
        .route_layer(middleware::from_fn_with_state(server, gate))
}

/// Whether `path` is a load's or an unload's (which [`gate`] checks instead of the inference
/// token's check).
pub fn is_control(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/v2/repository/models/") else { return false };
    matches!(rest.split_once('/'), Some((name, "load" | "unload")) if !name.is_empty())
}

/// A load's or unload's check: model control on, the control token (or the inference token when
/// the server has no control token), then [`same_site`].
async fn gate(State(s): State<Arc<Server>>, req: Request, next: Next) -> Response {
    let given = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match s.authorize_control(given).and_then(|()| same_site(req.headers())) {
        Ok(()) => next.run(req).await,
        Err(e) => {
            s.metrics.refused(e.outcome());
            super::http::error(e)
        }
    }
}

/// Refuses a request a web page could have sent from another site without a CORS preflight:
/// one with an `Origin` header (browsers send it on every cross-site POST, and on a page
/// rebound to this address by DNS; this server serves no page of its own, so no origin is its
/// own), or with a content type other than JSON (`text/plain`, a form's: the types a page may
/// send without asking). A client's request (tritonclient's: a JSON body, no content type) passes.
pub fn same_site(headers: &HeaderMap) -> Result<(), ServeError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let shown: String = String::from_utf8_lossy(origin.as_bytes()).chars().take(80).collect();
        return Err(ServeError::Forbidden(format!(
            "a load or unload with an Origin header ('{shown}') is refused: a web page could send it from another site, and this server serves no page of its own\n  fix: send it from a client (tritonclient, curl), not a browser"
        )));
    }
    for value in headers.get_all(header::CONTENT_TYPE) {
        let text = String::from_utf8_lossy(value.as_bytes());
        let media = text.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case("application/json") {
            let shown: String = media.chars().take(80).collect();
            return Err(ServeError::Forbidden(format!(
                "a load or unload with Content-Type '{shown}' is refused: only JSON is taken, since text/plain and the form types are what a web page can send from another site without a preflight\n  fix: send Content-Type: application/json (or no Content-Type)"
            )));
        }
    }
    Ok(())
}

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
