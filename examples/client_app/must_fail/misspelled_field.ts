// A negative type test: `deno check` of this file must fail, once for
// each misspelled field below (tests/client_package_test.ts runs it). It
// is excluded from `deno task check` (deno.json "exclude").

import { Moonbase } from "../../../client/mod.ts";
import type { Schema } from "../schema.ts";

const mb = new Moonbase<Schema>("http://localhost:7070");
const posts = mb.entity("posts");

// "titel": not a field of PostsCreate.
await posts.create({ titel: "Hello" });

// "vews": not a field of PostsRecord.
const post = await posts.get("0199");
console.log(post.vews);

// "post": not an entity of the schema.
mb.entity("post");
