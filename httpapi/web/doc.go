// Package web holds the files of the web page that httpapi embeds and serves at GET /
// (index.html, app.js, app.css, and its icon, icon.svg and favicon.ico), and the test that
// drives the page in headless Chromium.
package web
