// Moonbase dashboard: a small dependency-free single-page app over the REST API.
// Every value is rendered with textContent (never innerHTML).
const api = "/api/v1";
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const store = {
  get token() {
    return sessionStorage.getItem("mb_token") || "";
  },
  set token(v) {
    v
      ? sessionStorage.setItem("mb_token", v)
      : sessionStorage.removeItem("mb_token");
  },
};

function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const kid of kids.flat()) {
    if (kid !== null && kid !== undefined) {
      el.append(kid instanceof Node ? kid : String(kid));
    }
  }
  return el;
}

async function call(method, path, body, token = store.token) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(api + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return null;
  const env = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (
    res.status === 401 && path !== "/sys/admins/login" &&
    !path.startsWith("/sys/admins/setup")
  ) {
    store.token = "";
    go("/mb/login");
  }
  if (!res.ok) {
    const fields = env.data && env.data.fields
      ? "\n" +
        Object.entries(env.data.fields).map(([k, v]) => `${k}: ${v.message}`)
          .join("\n")
      : "";
    throw new Error((env.error || `HTTP ${res.status}`) + fields);
  }
  return env.data;
}

function go(path) {
  history.pushState(null, "", path);
  render();
}
addEventListener("popstate", render);

function errorBox() {
  return h("p", { class: "error", role: "alert" });
}

function authForm(title, button, onSubmit) {
  const err = errorBox();
  const email = h("input", {
    type: "email",
    name: "email",
    placeholder: "email",
    required: true,
    autocomplete: "username",
  });
  const password = h("input", {
    type: "password",
    name: "password",
    placeholder: "password",
    required: true,
    minlength: 8,
    autocomplete: "current-password",
  });
  return h(
    "form",
    {
      class: "card",
      onsubmit: async (e) => {
        e.preventDefault();
        err.textContent = "";
        try {
          await onSubmit(email.value, password.value);
        } catch (x) {
          err.textContent = x.message;
        }
      },
    },
    h("h2", {}, title),
    email,
    password,
    h("button", { class: "primary", type: "submit" }, button),
    err,
  );
}

function setupPage() {
  const token = new URLSearchParams(location.search).get("token") || "";
  main.replaceChildren(
    authForm(
      "Create the first admin",
      "Create admin",
      async (email, password) => {
        const data = await call("POST", "/sys/admins/setup", {
          email,
          password,
        }, token);
        store.token = data.token;
        go("/mb");
      },
    ),
    h(
      "p",
      { class: "muted" },
      token
        ? ""
        : "The setup link printed by the server carries a token; open that link.",
    ),
  );
}

function loginPage() {
  main.replaceChildren(
    authForm("Admin login", "Log in", async (email, password) => {
      const data = await call("POST", "/sys/admins/login", {
        identity: email,
        password,
      });
      store.token = data.token;
      go("/mb");
    }),
  );
}

async function homePage() {
  const err = errorBox();
  let schemas = [];
  try {
    schemas = await call("GET", "/schemas");
  } catch (x) {
    main.replaceChildren(err);
    err.textContent = x.message;
    return;
  }
  const selected = new URLSearchParams(location.search).get("entity") || "";
  const list = h(
    "ul",
    {},
    schemas.map((s) =>
      h(
        "li",
        {},
        h(
          "a",
          {
            href: `/mb?entity=${encodeURIComponent(s.name)}`,
            class: s.name === selected ? "active" : "",
            onclick: (e) => {
              e.preventDefault();
              go(`/mb?entity=${encodeURIComponent(s.name)}`);
            },
          },
          s.name,
          " ",
          h("span", { class: "muted" }, s.type),
        ),
      )
    ),
  );
  const side = h(
    "aside",
    {},
    h("h3", {}, "Entities"),
    list,
    h(
      "p",
      {},
      h("a", {
        href: "/mb?new=1",
        onclick: (e) => {
          e.preventDefault();
          go("/mb?new=1");
        },
      }, "+ New entity"),
    ),
  );
  const content = h("div");
  main.replaceChildren(h("div", { class: "layout" }, side, content));
  const schema = schemas.find((s) => s.name === selected);
  if (new URLSearchParams(location.search).get("new")) {
    content.append(newEntity());
  } else if (schema) content.append(...entityView(schema));
  else {content.append(
      h(
        "section",
        { class: "card" },
        h("p", {}, "Pick an entity, or create one."),
      ),
    );}
}

function newEntity() {
  const err = errorBox();
  const text = h("textarea", { "aria-label": "schema" });
  text.value = JSON.stringify(
    {
      name: "posts",
      type: "base",
      fields: [{ name: "title", type: "string", required: true }],
      rules: {
        list: { mode: "public", expr: "" },
        get: { mode: "public", expr: "" },
        add: { mode: "auth", expr: "" },
        update: { mode: "", expr: "" },
        delete: { mode: "", expr: "" },
      },
    },
    null,
    2,
  );
  return h(
    "section",
    { class: "card" },
    h("h3", {}, "New entity"),
    text,
    h("button", {
      class: "primary",
      onclick: async () => {
        err.textContent = "";
        try {
          const s = await call("POST", "/schemas", JSON.parse(text.value));
          go(`/mb?entity=${encodeURIComponent(s.name)}`);
        } catch (x) {
          err.textContent = x.message;
        }
      },
    }, "Create"),
    err,
  );
}

function entityView(schema) {
  const err = errorBox();
  const fields = schema.type === "view"
    ? schema.fields.map((f) => f.name)
    : schema.fields.filter((f) => f.name !== "password").map((f) => f.name);
  const tbody = h("tbody");
  const filter = h("input", {
    placeholder: 'filter, e.g. title == "hello"',
    size: 40,
  });
  let cursor = null;
  const more = h("button", { onclick: () => load(false) }, "Load more");
  async function load(reset) {
    err.textContent = "";
    if (reset) {
      tbody.replaceChildren();
      cursor = null;
    }
    const q = new URLSearchParams({ limit: "50" });
    if (cursor) q.set("after", cursor);
    if (filter.value.trim()) q.set("filter", filter.value.trim());
    try {
      const page = await call(
        "GET",
        `/entities/${encodeURIComponent(schema.name)}?${q}`,
      );
      for (const rec of page.items) {
        tbody.append(
          h(
            "tr",
            {},
            fields.map((f) => h("td", {}, fmt(rec[f]))),
            schema.type === "view" ? null : h(
              "td",
              {},
              h("button", {
                class: "danger",
                onclick: async () => {
                  if (!confirm("Delete this record?")) return;
                  try {
                    await call(
                      "DELETE",
                      `/entities/${encodeURIComponent(schema.name)}/${
                        encodeURIComponent(rec.id)
                      }`,
                    );
                    load(true);
                  } catch (x) {
                    err.textContent = x.message;
                  }
                },
              }, "Delete"),
            ),
          ),
        );
      }
      cursor = page.cursor;
      more.hidden = !page.has_more;
    } catch (x) {
      err.textContent = x.message;
    }
  }
  const newRec = h("textarea", { "aria-label": "new record" });
  newRec.value = JSON.stringify(
    Object.fromEntries(
      schema.fields.filter((f) =>
        !f.system || ["email", "password"].includes(f.name)
      ).map((f) => [f.name, null]),
    ),
    null,
    2,
  );
  const schemaText = h("textarea", { "aria-label": "schema json" });
  schemaText.value = JSON.stringify(
    {
      name: schema.name,
      rules: schema.rules,
      has_api: schema.has_api,
      fields: schema.fields.filter((f) => !f.system),
      ...(schema.type === "view" ? { view_query: schema.view_query } : {}),
    },
    null,
    2,
  );
  load(true);
  return [
    h(
      "section",
      { class: "card" },
      h("h3", {}, schema.name, " ", h("span", { class: "muted" }, schema.type)),
      h(
        "div",
        { class: "row" },
        filter,
        h("button", { onclick: () => load(true) }, "Search"),
      ),
      h(
        "table",
        {},
        h("thead", {}, h("tr", {}, fields.map((f) => h("th", {}, f)), h("th"))),
        tbody,
      ),
      more,
      err,
    ),
    schema.type === "view" || schema.is_system ? null : h(
      "section",
      { class: "card" },
      h("h3", {}, "New record"),
      newRec,
      h("button", {
        class: "primary",
        onclick: async () => {
          try {
            await call(
              "POST",
              `/entities/${encodeURIComponent(schema.name)}`,
              JSON.parse(newRec.value),
            );
            load(true);
          } catch (x) {
            err.textContent = x.message;
          }
        },
      }, "Create record"),
    ),
    schema.is_system ? null : h(
      "section",
      { class: "card" },
      h("h3", {}, "Schema and access rules"),
      schemaText,
      h(
        "div",
        { class: "row" },
        h("button", {
          class: "primary",
          onclick: async () => {
            try {
              const s = await call(
                "PATCH",
                `/schemas/${encodeURIComponent(schema.id)}`,
                JSON.parse(schemaText.value),
              );
              go(`/mb?entity=${encodeURIComponent(s.name)}`);
            } catch (x) {
              err.textContent = x.message;
            }
          },
        }, "Save schema"),
        h("button", {
          class: "danger",
          onclick: async () => {
            if (
              !confirm(`Delete entity ${schema.name} and all its records?`)
            ) return;
            try {
              await call(
                "DELETE",
                `/schemas/${encodeURIComponent(schema.id)}`,
              );
              go("/mb");
            } catch (x) {
              err.textContent = x.message;
            }
          },
        }, "Delete entity"),
      ),
    ),
  ];
}

function fmt(v) {
  if (v === null || v === undefined) return h("span", { class: "muted" }, "—");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

function render() {
  nav.replaceChildren(
    store.token
      ? h("button", {
        onclick: async () => {
          await call("POST", "/sys/admins/logout").catch(() => {});
          store.token = "";
          go("/mb/login");
        },
      }, "Log out")
      : "",
  );
  const path = location.pathname.replace(/\/+$/, "");
  if (path === "/mb/setup") return setupPage();
  if (path === "/mb/login" || !store.token) return loginPage();
  return homePage();
}
render();
