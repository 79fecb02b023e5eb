//! The web console at `/ui/`: a page and a script built into the binary (no CDN, works
//! offline) that read the admin API. Same listener, token and bind rules as the API: with
//! `http.auth_token` set, `/ui/login` takes the token once and keeps it in an HttpOnly,
//! SameSite=Strict cookie that the API accepts in place of the `Authorization` header.

use super::auth::{Gate, COOKIE};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Form, Router};
use serde::Deserialize;

const INDEX: &str = include_str!("ui/index.html");
const APP_JS: &str = include_str!("ui/app.js");
const APP_CSS: &str = include_str!("ui/app.css");
const LOGIN: &str = include_str!("ui/login.html");

/// The console's routes (checked by the same [`super::auth::check`] as the API).
pub fn routes(gate: Gate) -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route(
            "/ui/app.js",
            get(|| asset(APP_JS, "text/javascript; charset=utf-8")),
        )
        .route(
            "/ui/app.css",
            get(|| asset(APP_CSS, "text/css; charset=utf-8")),
        )
        .route("/ui/login", get(login_page).post(login))
        .route("/ui/logout", axum::routing::post(logout))
        .route("/ui/", get(page))
        .route("/ui/{*rest}", get(page))
        .with_state(gate)
}

async fn asset(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// Every console address answers the same page; its script draws what the path names.
async fn page() -> Response {
    asset(INDEX, "text/html; charset=utf-8").await
}

async fn login_page(State(gate): State<Gate>) -> Response {
    if !gate.required() {
        return Redirect::to("/ui/").into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        LOGIN.replace("{error}", ""),
    )
        .into_response()
}

#[derive(Deserialize)]
struct Login {
    token: String,
}

async fn login(State(gate): State<Gate>, Form(f): Form<Login>) -> Response {
    let token = f.token.trim();
    if !gate.admits_token(Some(token.as_bytes())) {
        let page = LOGIN.replace(
            "{error}",
            "<p class=\"error\">That is not this broker's token (http.auth_token).</p>",
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response();
    }
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/ui/".into()),
        ],
    )
        .into_response()
}

async fn logout() -> Response {
    let cookie = format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/ui/login".into()),
        ],
    )
        .into_response()
}
