package pgtest_test
import ("testing";"context";"github.com/sparkhost/sparkhost/modules/mmo/internal/pgtest";"github.com/jackc/pgx/v5";"time")
func TestStart(t *testing.T){
 t0:=time.Now()
 c,err:=pgtest.Start(); if err!=nil{t.Fatal(err)}; defer c.Stop()
 t.Log("start", time.Since(t0))
 db,err:=c.CreateDB(context.Background()); if err!=nil{t.Fatal(err)}
 conn,err:=pgx.Connect(context.Background(), c.URL(db)); if err!=nil{t.Fatal(err)}
 var v string; conn.QueryRow(context.Background(),"select version()").Scan(&v); t.Log(v); conn.Close(context.Background())
 c.Kill(); t.Log("killed"); if err:=c.Restart(); err!=nil{t.Fatal(err)}; t.Log("restarted", time.Since(t0))
}
