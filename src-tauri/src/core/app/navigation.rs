use tauri::{
    plugin::{Builder, TauriPlugin},
    Runtime, Url,
};

/// Keeps the webview on the app: any navigation elsewhere (a link the UI failed to catch) is
/// refused. Links from messages open in the system browser through `open_link` instead.
pub fn navigation_guard<R: Runtime>() -> TauriPlugin<R> {
    Builder::new("navigation-guard").on_navigation(|_webview, url| is_app_url(url)).build()
}

/// The app's own pages: the bundled UI, or Vite's dev server in development builds.
fn is_app_url(url: &Url) -> bool {
    let bundled = match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => url.host_str() == Some("tauri.localhost"),
        _ => false,
    };
    bundled
        || (cfg!(dev)
            && url.scheme() == "http"
            && url.host_str() == Some("localhost")
            && url.port() == Some(5173))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_app_itself_is_shown() {
        let allowed = |url: &str| is_app_url(&Url::parse(url).unwrap());
        assert!(allowed("tauri://localhost/index.html"));
        assert!(allowed("http://tauri.localhost/"));
        for refused in [
            "https://example.com/",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,hi",
            "tauri://evil.example",
            "http://localhost.evil.example/",
        ] {
            assert!(!allowed(refused), "{refused}");
        }
    }
}
