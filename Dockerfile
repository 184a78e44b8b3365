# syntax=docker/dockerfile:1
# Switchyard MCP gateway. Multi-stage: TypeScript is compiled in `build`; the runtime image has
# production dependencies only, runs as the non-root `node` user, writes nothing outside /tmp
# (run it with a read-only root filesystem and an emptyDir or tmpfs at /tmp), and reads its
# config from /etc/switchyard/gateway.yaml (mount yours there; see docs/deploy.md).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --loglevel=warn
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --ignore-scripts --loglevel=warn && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY deploy/gateway.yaml /etc/switchyard/gateway.yaml
USER node
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/main.js"]
CMD ["--config", "/etc/switchyard/gateway.yaml"]
