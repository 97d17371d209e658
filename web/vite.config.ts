import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The viewer is built into dist/web, which the service serves at `/` (src/viewer.ts).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  build: {
    outDir: fileURLToPath(new URL('../dist/web', import.meta.url)),
    emptyOutDir: true,
    // One chunk for the pages, one for the chart library, so the runs list does not wait for the charts.
    chunkSizeWarningLimit: 800,
  },
  // `npm run dev:web` proxies the API to a service started with `npm run dev`.
  server: {
    proxy: { '/graphql': 'http://127.0.0.1:4000' },
  },
});
